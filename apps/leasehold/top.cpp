// leasehold top: every lease under the prefix, one row each, live in the terminal or once.
#include <langinfo.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <clocale>
#include <csignal>
#include <ctime>
#include <iostream>
#include <set>
#include <tuple>

#include "inspect.hpp"

// Without its macros curses declares plain functions: no clear() or erase() macro rewrites the
// member calls of the standard containers.
#define NCURSES_NOMACROS
#include <curses.h>

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

// The SCAN calls of one refresh of the live view (COUNT 1000 each): a keyspace of a million keys
// is walked in about 50 refreshes, never all at once.
constexpr std::size_t kScanCallsPerRefresh = 20;
constexpr milliseconds kShortestInterval{100};
constexpr int kKeyPollMs = 100;  // how soon the live view sees a signal while it waits for a key

enum class Kind { exclusive, shared, permit, cron };  // the order of a name's rows

std::string_view kind_name(Kind kind) {
  constexpr std::string_view names[] = {"exclusive", "shared", "permit", "cron"};
  return names[static_cast<std::size_t>(kind)];
}

// One lease, and the counts of its name that go with its kind.
struct Row {
  std::string name;
  Kind kind = Kind::exclusive;
  std::string token;  // the first 8 hex digits of its id
  long long ms_left = 0;
  std::optional<Holder> holder;
  long long readers = 0;  // exclusive and shared rows: the name's shared leases
  long long waiters = 0;  // the queue of the run lease, or of the permits
  std::optional<long long> fence;
};

// The counts beside a run name's leases, read in its slot (the run's and the permits' keys share
// the hash tag {run:NAME}): each queue's size and each last fencing number (0: none). pcall: a key
// of another type is no queue or counter of leasehold's, and counts as absent.
const Script& counts_script() {
  static const Script script(
      "local function size(key)\n"
      "  local n = redis.pcall('ZCARD', key)\n"
      "  return type(n) == 'number' and n or 0\n"
      "end\n"
      "local function fence(key)\n"
      "  local v = redis.pcall('GET', key)\n"
      "  return type(v) == 'string' and tonumber(v) or 0\n"
      "end\n"
      "return {size(KEYS[1]), fence(KEYS[2]), size(KEYS[3]), fence(KEYS[4])}\n");
  return script;
}

// The four calls that read a name: its run lease, its permits, its cron lease, the counts.
constexpr std::size_t kCallsPerName = 4;

void add_name_calls(const Globals& globals, const std::string& name, std::vector<Command>& calls) {
  const auto run = run_lock(globals, milliseconds(1000));
  const auto permits = run_semaphore(globals, milliseconds(1000), 1);
  calls.emplace_back(describe(run, name).request());
  calls.emplace_back(describe(permits, name).request());
  calls.emplace_back(describe(cron_lock(globals, milliseconds(1000)), name).request());
  const std::string run_queue = same_slot_key(run.writer_key(name), ":queue");
  const std::string run_fence = run.fence_key(name);
  const std::string permit_queue = same_slot_key(permits.holders_key(name), ":queue");
  const std::string permit_fence = permits.fence_key(name);
  const std::string_view keys[] = {run_queue, run_fence, permit_queue, permit_fence};
  calls.emplace_back(Request::script(counts_script(), keys, {}).retry_safe());
}

// The leases a describe call found; none when a key of it holds another type (not a lease).
std::vector<LeaseInfo> leases_of(const Result<Reply>& reply, LeaseInfo::Kind set_kind) {
  if (!reply && reply.error() == errc::wrong_type)
    return {};
  // The reply read as a Describe query reads it: only the kind of the set's members matters.
  return Describe<Lock<std::string>>({}, {}, set_kind).parse(reply.value(), Timing{}).value();
}

std::optional<long long> fence_of(const Reply& counter) {
  return counter.integer > 0 ? std::optional(counter.integer) : std::nullopt;
}

Row row_of(const std::string& name, Kind kind, const LeaseInfo& lease, long long readers,
           long long waiters, std::optional<long long> fence) {
  return Row{name,         kind,    lease.id_prefix, lease.time_left.count(),
             lease.holder, readers, waiters,         fence};
}

// The rows of one name from its calls' replies (kCallsPerName of them, from `at`).
void add_name_rows(const std::string& name, const std::vector<Result<Reply>>& replies,
                   std::size_t at, std::vector<Row>& rows) {
  const std::vector<LeaseInfo> run = leases_of(replies[at], LeaseInfo::Kind::shared);
  const std::vector<LeaseInfo> permits = leases_of(replies[at + 1], LeaseInfo::Kind::permit);
  const std::vector<LeaseInfo> cron = leases_of(replies[at + 2], LeaseInfo::Kind::exclusive);
  const std::vector<Reply>& counts = replies[at + 3].value().elements;
  const auto readers = std::count_if(run.begin(), run.end(), [](const LeaseInfo& lease) {
    return lease.kind == LeaseInfo::Kind::shared;
  });
  for (const LeaseInfo& lease : run) {
    const Kind kind = lease.kind == LeaseInfo::Kind::shared ? Kind::shared : Kind::exclusive;
    rows.push_back(
        row_of(name, kind, lease, readers, counts.at(0).integer, fence_of(counts.at(1))));
  }
  for (const LeaseInfo& lease : permits)
    rows.push_back(
        row_of(name, Kind::permit, lease, 0, counts.at(2).integer, fence_of(counts.at(3))));
  for (const LeaseInfo& lease : cron)
    rows.push_back(row_of(name, Kind::cron, lease, 0, 0, std::nullopt));
}

// Every lease of `names`, in one round trip (a cluster's: one per master).
std::vector<Row> read_rows(const Globals& globals, Client& redis,
                           const std::set<std::string>& names) {
  std::vector<Command> calls;
  calls.reserve(names.size() * kCallsPerName);
  for (const std::string& name : names)
    add_name_calls(globals, name, calls);
  std::vector<Row> rows;
  if (calls.empty())
    return rows;
  const std::vector<Result<Reply>> replies = redis.process(calls);
  std::size_t at = 0;
  for (const std::string& name : names) {
    add_name_rows(name, replies, at, rows);
    at += kCallsPerName;
  }
  return rows;
}

// The SCAN pattern of every key under the prefix, its glob characters taken literally.
std::string prefix_pattern(const std::string& prefix) {
  std::string pattern;
  for (const char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\')
      pattern += '\\';
    pattern += c;
  }
  return pattern + ":*";
}

// By name (then kind), by time left (least first) or by time held (longest first; leases
// without a holder's identity last).
void sort_rows(std::vector<Row>& rows, const std::string& by) {
  const auto by_name = [](const Row& a, const Row& b) {
    return std::tie(a.name, a.kind, a.token) < std::tie(b.name, b.kind, b.token);
  };
  std::stable_sort(rows.begin(), rows.end(), by_name);
  if (by == "left")
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.ms_left < b.ms_left; });
  if (by == "held")
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      if (a.holder.has_value() != b.holder.has_value())
        return a.holder.has_value();
      return a.holder && a.holder->taken_at < b.holder->taken_at;
    });
}

Json rows_json(const std::vector<Row>& rows) {
  Json array = Json::array();
  for (const Row& row : rows)
    array.push_back({{"name", row.name},
                     {"kind", kind_name(row.kind)},
                     {"token", row.token},
                     {"ms_left", row.ms_left},
                     {"holder", holder_json(row.holder)},
                     {"readers", row.readers},
                     {"waiters", row.waiters},
                     {"fence", row.fence ? Json(*row.fence) : Json()}});
  return array;
}

// ---- Text that fits a terminal's columns, one column per character.

// The byte length of the UTF-8 character that `text` starts with; 0 when it is not one.
std::size_t utf8_length(std::string_view text) {
  const auto lead = static_cast<unsigned char>(text[0]);
  const std::size_t length = lead < 0x80           ? 1
                             : (lead >> 5) == 0x06 ? 2
                             : (lead >> 4) == 0x0e ? 3
                             : (lead >> 3) == 0x1e ? 4
                                                   : 0;
  if (length == 0 || length > text.size())
    return 0;
  for (std::size_t i = 1; i < length; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80)
      return 0;
  return length;
}

// `text` safe to show: control characters (C0, DEL, C1) and bytes that are not UTF-8 become '?',
// and so does every non-ASCII character for a terminal that is not UTF-8.
std::string displayable(std::string_view text, bool utf8) {
  std::string shown;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_length(text.substr(at));
    const auto lead = static_cast<unsigned char>(text[at]);
    const bool control =
        (length == 1 && (lead < 0x20 || lead == 0x7f)) ||
        (length == 2 && lead == 0xc2 && static_cast<unsigned char>(text[at + 1]) < 0xa0);
    if (length == 0 || control || (length > 1 && !utf8))
      shown += '?';
    else
      shown.append(text.substr(at, length));
    at += std::max<std::size_t>(length, 1);
  }
  return shown;
}

std::size_t columns_of(std::string_view shown) {
  return static_cast<std::size_t>(std::count_if(shown.begin(), shown.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

// `shown` cut to `width` columns, its last one `ellipsis` when cut.
std::string fit(const std::string& shown, std::size_t width, std::string_view ellipsis) {
  if (columns_of(shown) <= width)
    return shown;
  if (width == 0)
    return "";
  std::size_t at = 0;
  for (std::size_t kept = 0; kept < width - 1; ++kept)
    at += std::max<std::size_t>(utf8_length(std::string_view(shown).substr(at)), 1);
  return shown.substr(0, at) + std::string(ellipsis);
}

struct Style {
  bool utf8 = true;
  std::string_view ellipsis() const { return utf8 ? "\xe2\x80\xa6" : "~"; }
};

// ---- The table: columns narrowed, then dropped, to fit the width.

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
  cells[kWait] = row.kind != Kind::cron ? std::to_string(row.waiters) : "";
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
    if (const std::size_t c = most_narrowable(widths); c < kColumnCount)
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

// The column headers, then one line per row.
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

// "leasehold top  127.0.0.1:6379  prefix leasehold  3 leases  by name  12:34:56"; a long server
// address (a socket's path, a cluster's seeds) is cut first.
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

// ---- --once and --json

std::size_t stdout_width() {
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

int print_once(const Globals& globals, const TopOptions& options) {
  Client redis = connect_or_exit(globals);
  try {
    std::set<std::string> names;
    add_lease_names(globals, options.pattern, scan_keys(redis, prefix_pattern(globals.prefix)),
                    names);
    std::vector<Row> rows = read_rows(globals, redis, names);
    sort_rows(rows, options.sort);
    if (options.json) {
      std::cout << json_text(rows_json(rows)) << "\n";
      return 0;
    }
    const Style style;
    const std::size_t width = stdout_width();
    std::cout << header_line(globals, redis, options, rows.size(), width, style) << "\n";
    for (const std::string& line : table_lines(rows, width, style))
      std::cout << line << "\n";
    return 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

// ---- The live view

volatile std::sig_atomic_t stop_signal = 0;

void on_stop_signal(int number) {
  stop_signal = number;
}

// SIGINT (Ctrl-C), SIGTERM and SIGHUP end the view through its loop, which restores the terminal.
// Set before curses starts, which then leaves them alone.
void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (const int number : {SIGINT, SIGTERM, SIGHUP})
    sigaction(number, &action, nullptr);
}

// The terminal in curses mode for the scope's life: restored (endwin) however the scope ends.
class Screen {
 public:
  Screen() {
    std::setlocale(LC_CTYPE, "");  // UTF-8 names and "…" on a UTF-8 terminal
    style_.utf8 = std::string_view(nl_langinfo(CODESET)) == "UTF-8";
    screen_ = newterm(nullptr, stdout, stdin);
    if (screen_ == nullptr)
      throw UsageError{"top: cannot drive this terminal (TERM); use --once or --json"};
    ::cbreak();  // keys at once, and Ctrl-C still a signal
    ::noecho();
    ::keypad(stdscr, TRUE);
    ::curs_set(0);
  }
  ~Screen() {
    ::endwin();
    ::delscreen(screen_);
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  const Style& style() const { return style_; }

  // The header, the table (as many of its lines as fit, the last one saying how many more
  // there are when they do not all fit) and a footer.
  void draw(const std::string& header, const std::vector<std::string>& table,
            const std::string& footer) {
    ::erase();
    const auto fitting = static_cast<std::size_t>(std::max(0, LINES - 2));
    const std::size_t shown = std::min(fitting, table.size());
    ::attron(A_BOLD);
    ::mvaddstr(0, 0, header.c_str());
    ::attroff(A_BOLD);
    for (std::size_t line = 0; line < shown; ++line) {
      std::string text = table[line];
      if (line + 1 == shown && shown < table.size())
        text = std::to_string(table.size() - line) + " more rows" + std::string(style_.ellipsis());
      ::attr_set(line == 0 ? A_REVERSE : A_NORMAL, 0, nullptr);
      ::mvaddstr(static_cast<int>(line) + 1, 0, text.c_str());
    }
    ::attr_set(A_NORMAL, 0, nullptr);
    ::mvaddstr(LINES - 1, 0, footer.c_str());
    ::refresh();
  }

  // Waits up to `interval` for a key, in short steps so that a signal ends the wait soon: true
  // on 'q'. A resized terminal ends the wait at once, for a redraw.
  bool quit_within(milliseconds interval) {
    const auto deadline = std::chrono::steady_clock::now() + interval;
    while (stop_signal == 0) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left <= milliseconds::zero())
        return false;
      ::timeout(static_cast<int>(std::min<long long>(left.count(), kKeyPollMs)));
      const int key = ::getch();
      if (key == 'q' || key == 'Q')
        return true;
      if (key == KEY_RESIZE)
        return false;
    }
    return false;
  }

 private:
  SCREEN* screen_ = nullptr;
  Style style_;
};

// What the live view knows: the names found so far, by a scan that goes on across refreshes.
class LiveLeases {
 public:
  LiveLeases(const Globals& globals, const TopOptions& options, Client& redis)
      : globals_(globals), options_(options), redis_(redis) {}

  // A bounded step of the scan, then a read of every known name; a name without leases is
  // forgotten (the scan finds it again if it comes back). A failure is kept for the footer.
  void refresh() {
    try {
      if (!scanner_)
        scanner_.emplace(redis_, prefix_pattern(globals_.prefix));
      add_lease_names(globals_, options_.pattern, scanner_->scan(kScanCallsPerRefresh), names_);
      rows_ = read_rows(globals_, redis_, names_);
      sort_rows(rows_, options_.sort);
      names_.clear();
      for (const Row& row : rows_)
        names_.insert(row.name);
      failure_.clear();
    } catch (const std::exception& e) {
      failure_ = e.what();
      if (redis_.url().transport == RedisUrl::Transport::cluster)
        scanner_.reset();  // the masters may have changed: ask again
    }
  }

  void draw(Screen& screen) const {
    const auto width = static_cast<std::size_t>(std::max(COLS, 1));
    const Style& style = screen.style();
    std::string footer = "q: quit";
    if (!scanner_ || scanner_->passes() == 0)
      footer += "  scanning the keyspace" + std::string(style.ellipsis());
    if (!failure_.empty())
      footer += "  Redis: " + failure_;
    screen.draw(header_line(globals_, redis_, options_, rows_.size(), width, style),
                table_lines(rows_, width, style),
                fit(displayable(footer, style.utf8), width - 1, style.ellipsis()));
  }

 private:
  const Globals& globals_;
  const TopOptions& options_;
  Client& redis_;
  std::optional<KeyScanner> scanner_;
  std::set<std::string> names_;
  std::vector<Row> rows_;
  std::string failure_;
};

int live_view(const Globals& globals, const TopOptions& options) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
    throw UsageError{"top: the live view needs a terminal; use --once or --json"};
  Client redis = connect_or_exit(globals);
  catch_stop_signals();
  Screen screen;
  LiveLeases leases(globals, options, redis);
  while (stop_signal == 0) {
    leases.refresh();
    leases.draw(screen);
    if (screen.quit_within(options.interval))
      break;
  }
  return 0;
}

}  // namespace

int top(const Globals& globals, const TopOptions& options) {
  if (options.interval < kShortestInterval)
    throw UsageError{"top: --interval must be at least " + format_duration(kShortestInterval)};
  if (options.once || options.json)
    return print_once(globals, options);
  try {
    return live_view(globals, options);
  } catch (...) {
    throw;  // a handler, so that the stack unwinds and the terminal is restored on the way
  }
}

}  // namespace leasehold::cli
