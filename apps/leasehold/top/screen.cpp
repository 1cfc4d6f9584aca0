// leasehold top's live view (screen.hpp): the terminal in curses mode, and the leases it shows,
// found by a scan that goes on across refreshes.
#include "top/screen.hpp"

#include <langinfo.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <csignal>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "top/layout.hpp"
#include "top/rows.hpp"
#include "top/text.hpp"

// Without its macros curses declares plain functions: no clear() or erase() macro rewrites the
// member calls of the standard containers.
#define NCURSES_NOMACROS
#include <curses.h>

namespace leasehold::cli::top_parts {
namespace {

using std::chrono::milliseconds;

// The SCAN calls of one refresh of the live view (COUNT 1000 each): a keyspace of a million keys
// is walked in about 50 refreshes, never all at once.
constexpr std::size_t kScanCallsPerRefresh = 20;
constexpr int kKeyPollMs = 100;  // how soon the live view sees a signal while it waits for a key

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

}  // namespace

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

}  // namespace leasehold::cli::top_parts
