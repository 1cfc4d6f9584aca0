// leasehold top's table (layout.hpp): each row's cells, the columns' widths, the lines.
#include "top/layout.hpp"

#include <algorithm>
#include <array>
#include <ctime>

namespace leasehold::cli::top_parts {
namespace {

using std::chrono::milliseconds;

struct Column {
  std::string_view header;
  bool right_aligned;
  std::size_t narrowest;  // a flexible column's; 0: the column is never cut
  std::size_t widest;     // a flexible column's
};
constexpr Column kColumns[] = {
    {"NAME", false, 8, 40},  {"KIND", false, 0, 0}, {"HOST", false, 6, 16}, {"PID", true, 0, 0},
    {"LABEL", false, 6, 32}, {"HELD", true, 0, 0},  {"LEFT", true, 0, 0},   {"READ", true, 0, 0},
    {"WAIT", true, 0, 0},    {"FENCE", true, 0, 0},
};
// Each column's place in kColumns and in a row's cells.
enum Cell : std::size_t { kName, kKind, kHost, kPid, kLabel, kHeld, kLeft, kRead, kWait, kFence };
constexpr std::size_t kColumnCount = std::size(kColumns);
// The columns dropped, in this order, when narrowing is not enough; NAME, KIND and LEFT stay.
constexpr std::size_t kDropOrder[] = {kFence, kRead, kPid, kWait, kLabel, kHeld, kHost};
static_assert(kDropOrder[0] == kFence, "column_widths drops FENCE before it cuts a name");

using Cells = std::array<std::string, kColumnCount>;

Cells cells_of(const Row& row, const Style& style) {
  const bool run = row.kind == Kind::exclusive || row.kind == Kind::shared;
  Cells cells;
  cells[kName] = displayable(row.name, style.utf8);
  cells[kKind] = kind_name(row.kind);
  if (row.holder) {
    cells[kHost] = displayable(row.holder->host, style.utf8);
    cells[kPid] = std::to_string(row.holder->pid);
    cells[kLabel] = displayable(row.holder->label, style.utf8);
    const auto held = server_clock_now() - row.holder->taken_at;
    cells[kHeld] = format_duration(
        std::max(milliseconds::zero(), std::chrono::duration_cast<milliseconds>(held)));
  }
  cells[kLeft] = format_duration(milliseconds(std::max(0LL, row.ms_left)));
  cells[kRead] = run ? std::to_string(row.readers) : "";
  cells[kWait] =
      row.kind != Kind::cron && row.kind != Kind::leader ? std::to_string(row.waiters) : "";
  cells[kFence] = row.fence ? std::to_string(*row.fence) : "";
  return cells;
}

using Widths = std::array<std::size_t, kColumnCount>;

// Each column as wide as its widest cell (a flexible one at most its widest).
Widths natural_widths(const std::vector<Cells>& rows) {
  Widths widths{};
  for (std::size_t c = 0; c < kColumnCount; ++c) {
    widths[c] = kColumns[c].header.size();
    for (const Cells& cells : rows)
      widths[c] = std::max(widths[c], columns_of(cells[c]));
    if (kColumns[c].narrowest > 0)
      widths[c] = std::min(widths[c], kColumns[c].widest);
  }
  return widths;
}

std::size_t line_width(const Widths& widths) {
  std::size_t sum = 0, shown = 0;
  for (const std::size_t width : widths)
    sum += width, shown += width > 0;
  return sum + (shown > 0 ? shown - 1 : 0);  // a space between columns
}

// The flexible column farthest above its narrowest, or kColumnCount when none is above it.
std::size_t most_narrowable(const Widths& widths) {
  std::size_t slack = 0, found = kColumnCount;
  for (std::size_t c = 0; c < kColumnCount; ++c)
    if (kColumns[c].narrowest > 0 && widths[c] > kColumns[c].narrowest &&
        widths[c] - kColumns[c].narrowest > slack)
      slack = widths[c] - kColumns[c].narrowest, found = c;
  return found;
}

// Each column's width (0: dropped) for lines of at most `width` columns.
Widths column_widths(const std::vector<Cells>& rows, std::size_t width) {
  Widths widths = natural_widths(rows);
  std::size_t dropped = 0;
  while (line_width(widths) > width) {
    const std::size_t c = most_narrowable(widths);
    // Names come before fencing numbers (16 digits, from the server's clock): FENCE, the first
    // column dropped, goes before a name is cut.
    if (c == kName && dropped == 0)
      widths[kDropOrder[dropped++]] = 0;
    else if (c < kColumnCount)
      --widths[c];
    else if (dropped < std::size(kDropOrder))
      widths[kDropOrder[dropped++]] = 0;
    else
      break;  // too narrow even so: the lines are cut
  }
  return widths;
}

std::string table_line(const Cells& cells, const Widths& widths, std::size_t width,
                       const Style& style) {
  std::string line;
  for (std::size_t c = 0; c < kColumnCount; ++c) {
    if (widths[c] == 0)
      continue;
    const std::string cell = fit(cells[c], widths[c], style.ellipsis());
    const std::string padding(widths[c] - columns_of(cell), ' ');
    line +=
        (line.empty() ? "" : " ") + (kColumns[c].right_aligned ? padding + cell : cell + padding);
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  return fit(line, width, style.ellipsis());
}

}  // namespace

std::vector<std::string> table_lines(const std::vector<Row>& rows, std::size_t width,
                                     const Style& style) {
  std::vector<Cells> cells;
  cells.reserve(rows.size());
  for (const Row& row : rows)
    cells.push_back(cells_of(row, style));
  const auto widths = column_widths(cells, width);
  Cells headers;
  for (std::size_t c = 0; c < kColumnCount; ++c)
    headers[c] = kColumns[c].header;
  std::vector<std::string> lines{table_line(headers, widths, width, style)};
  for (const Cells& row : cells)
    lines.push_back(table_line(row, widths, width, style));
  return lines;
}

std::string header_line(const Globals& globals, Client& redis, const TopOptions& options,
                        std::size_t leases, std::size_t width, const Style& style) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", localtime_r(&now, &local));
  const std::string head = "leasehold top  ";
  const std::string tail =
      displayable("  prefix " + globals.prefix + "  " + std::to_string(leases) +
                      (leases == 1 ? " lease" : " leases") + "  by " + options.sort + "  " + clock,
                  style.utf8);
  const std::size_t room = width - std::min(width, head.size() + columns_of(tail));
  const std::string server = displayable(redis.url().address(), style.utf8);
  return fit(head + fit(server, std::max<std::size_t>(room, 8), style.ellipsis()) + tail, width,
             style.ellipsis());
}

}  // namespace leasehold::cli::top_parts
