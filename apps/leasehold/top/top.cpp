// leasehold top: every lease under the prefix, one row each, live in the terminal (screen.cpp)
// or once, as a plain-text table or as JSON (here).
#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "inspect.hpp"
#include "top/layout.hpp"
#include "top/rows.hpp"
#include "top/screen.hpp"
#include "top/text.hpp"

namespace leasehold::cli {
namespace {

constexpr std::chrono::milliseconds kShortestInterval{100};

}  // namespace

namespace top_parts {
namespace {

// The columns of the terminal on stdout; 80 for a file or a pipe.
std::size_t stdout_width() {
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

// One plain-text table (as wide as the terminal, else 80 columns) or one JSON array.
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

}  // namespace
}  // namespace top_parts

int top(const Globals& globals, const TopOptions& options) {
  if (options.interval < kShortestInterval)
    throw UsageError{"top: --interval must be at least " + format_duration(kShortestInterval)};
  if (options.once || options.json)
    return top_parts::print_once(globals, options);
  try {
    return top_parts::live_view(globals, options);
  } catch (...) {
    throw;  // a handler, so that the stack unwinds and the terminal is restored on the way
  }
}

}  // namespace leasehold::cli
