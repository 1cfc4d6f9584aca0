// leasehold elect: runs COMMAND only while this process leads the election NAME. The library's
// run_elector stands, leads and resigns; each term runs COMMAND under supervise(), which stops
// its group (SIGTERM, then SIGKILL after --kill-after) the moment the leadership is lost.
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cstdio>
#include <fstream>
#include <mutex>
#include <stop_token>

#include "cli.hpp"
#include "displayable.hpp"
#include "signal_thread.hpp"
#include "supervise.hpp"

namespace leasehold::cli {
namespace {

// The command of the current term, for the signal thread: a signal leasehold passes on goes to
// the command while one runs (it decides when to end), and ends the elector while none does.
class CurrentCommand {
 public:
  explicit CurrentCommand(std::stop_source& elector) : elector_(elector) {}

  // Spawns `command`, unless a signal came first (then: a Child without a pid or an error).
  Child start(const std::vector<std::string>& command,
              const std::vector<std::pair<std::string, std::string>>& environment,
              std::chrono::milliseconds kill_after) {
    std::lock_guard lock(mutex_);
    if (signalled_ != 0)
      return Child{};
    child_ = spawn_child(command, environment, kill_after);
    return child_;
  }
  void ended() {
    std::lock_guard lock(mutex_);
    child_ = Child{};
  }
  void on_signal(int signal) {
    std::lock_guard lock(mutex_);
    if (signalled_ == 0)
      signalled_ = signal;
    if (child_.pid > 0) {
      ::kill(child_.pid, signal);
    } else {
      standing_ended_ = true;
      elector_.request_stop();
    }
  }
  int signalled() const {
    std::lock_guard lock(mutex_);
    return signalled_;
  }
  // Whether a signal came while no command ran: elect ends with 128 + its number.
  bool standing_ended() const {
    std::lock_guard lock(mutex_);
    return standing_ended_;
  }

 private:
  std::stop_source& elector_;
  mutable std::mutex mutex_;
  Child child_;
  int signalled_ = 0;
  bool standing_ended_ = false;
};

// --status-file: written (atomically: a temporary file renamed over it) when a term starts, and
// removed when it ends, so that it exists exactly while this process leads.
class StatusFile {
 public:
  StatusFile(const std::optional<std::string>& path, const std::string& name, std::uint64_t term)
      : path_(path) {
    if (!path_)
      return;
    const std::string temporary = *path_ + ".tmp";
    std::ofstream out(temporary, std::ios::trunc);
    out << "name " << name << "\nterm " << term << "\n";
    out.close();
    if (!out || std::rename(temporary.c_str(), path_->c_str()) != 0)
      warn("--status-file: cannot write " + displayable(*path_) +
           "; leading without it (check the directory and its permissions)");
  }
  ~StatusFile() {
    if (path_)
      std::remove(path_->c_str());
  }
  StatusFile(const StatusFile&) = delete;
  StatusFile& operator=(const StatusFile&) = delete;

 private:
  std::optional<std::string> path_;
};

// What the last term's command came to: the exit code elect ends with.
struct TermResult {
  int exit_code = 0;
  CommandEnd end;
  bool ran = false;  // false: COMMAND could not be started (no term after it)
};

// One term: COMMAND runs with its environment until it ends or the leadership is lost.
TermResult lead_term(const Globals& globals, const ElectOptions& options,
                     const Term<std::string>& term, const std::stop_token& lost,
                     CurrentCommand& current) {
  const StatusFile status(options.status_file, options.name, term.number);
  chat(globals, "leading '" + options.name + "' (term " + std::to_string(term.number) + ")");
  Child child = current.start(
      options.command,
      {{"LEASEHOLD_NAME", options.name}, {"LEASEHOLD_TERM", std::to_string(term.number)}},
      options.kill_after);
  if (child.pid < 0) {
    if (child.spawn_error != 0)
      return TermResult{report_spawn_failure(options.command.front(), child.spawn_error), {}};
    return TermResult{128 + current.signalled(), {}};  // a signal came as the term began
  }
  TermResult result;
  result.ran = true;
  result.end = supervise(child, {.kill_after = options.kill_after,
                                 .lost = [&] { return lost.stop_requested(); },
                                 .forward_signals = false,
                                 .reaps_orphans = true});
  current.ended();
  result.exit_code =
      result.end.stopped == StopCause::lost ? kExitLeaseLost : exit_code_of(result.end.status);
  return result;
}

void validate(const ElectOptions& options) {
  if (options.name.empty())
    throw UsageError{"elect: NAME must not be empty"};
  if (options.command.empty())
    throw UsageError{"elect: no COMMAND given (leasehold elect NAME -- COMMAND ...)"};
  if (options.ttl < std::chrono::milliseconds(10))
    throw UsageError{"--ttl: must be at least 10ms"};
}

}  // namespace

int elect(const Globals& globals, const ElectOptions& options) {
  validate(options);
  set_holder_label(command_label(options.command));  // who leads, for leader, status and list
  block_forwarded_signals();                         // before the client starts its thread
  Client redis = connect_or_exit(globals);
  const Election<std::string> election = elect_election(globals, options.ttl);
#ifdef PR_SET_CHILD_SUBREAPER
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // as run does: the command's orphans are reaped
#endif
  std::stop_source stop;
  CurrentCommand current(stop);
  const SignalThread signals([&](int signal) { current.on_signal(signal); });
  TermResult last;
  ElectorOptions elector;
  elector.rejoin = options.rejoin;
  elector.value = options.value;
  elector.deposed = [&](const Deposed& deposed) {
    if (deposed.how == TermEnd::lost && last.end.stopped == StopCause::lost) {
      warn("lost the leadership of '" + displayable(options.name) + "' (term " +
           std::to_string(deposed.term) + ": " + loss_reason(deposed.cause) + "); " +
           command_fate(last.end));
      report_out_of_reach(last.end);
    }
  };
  try {
    run_elector(
        redis, election, options.name,
        [&](const Term<std::string>& term, std::stop_token lost) {
          last = lead_term(globals, options, term, lost, current);
          if (current.signalled() != 0 || !last.ran)
            stop.request_stop();  // ended by a signal, or COMMAND cannot run: no more terms
        },
        elector, stop.get_token());
  } catch (const Error& e) {
    exit_failure(globals, redis, options.name, e);  // a key of another type: named, exit 65
  }
  if (current.standing_ended())
    return 128 + current.signalled();
  return last.exit_code;
}

}  // namespace leasehold::cli
