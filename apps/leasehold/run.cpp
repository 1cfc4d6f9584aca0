// leasehold run: a distributed flock(1). Runs COMMAND while holding the lease NAME.
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <unistd.h>

#include <cerrno>

#include "cli.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

// While the command runs it owns the terminal (if leasehold had it), so that it can read from
// it: a background process group that reads the terminal is stopped by SIGTTIN.
struct TerminalHandover {
  explicit TerminalHandover(pid_t child_group) {
    if (::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp()) {
      sigset_t ttou;
      sigemptyset(&ttou);
      sigaddset(&ttou, SIGTTOU);  // taking the terminal back from the background is allowed
      pthread_sigmask(SIG_BLOCK, &ttou, nullptr);
      handed = ::tcsetpgrp(STDIN_FILENO, child_group) == 0;
    }
  }
  ~TerminalHandover() {
    if (handed)
      ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
  }
  bool handed = false;
};

enum class GroupState { gone, running, out_of_reach };

// What is left of a process group: kill(-group, 0) finds a member (a zombie too), none (ESRCH),
// or only members leasehold may not signal (EPERM).
GroupState group_state(pid_t group) {
  if (::kill(-group, 0) == 0)
    return GroupState::running;
  return errno == EPERM ? GroupState::out_of_reach : GroupState::gone;
}

// How the command's group ended.
struct CommandEnd {
  int status = 0;                                  // the command's, from waitpid
  std::optional<Clock::time_point> terminated_at;  // when the group got SIGTERM for a lost lease
  bool ended_first = false;  // the command had ended on its own when the loss was acted on
  bool killed = false;
  bool out_of_reach = false;  // members of the group could not be signalled
};

// Waits for the command; if the lease is lost meanwhile, stops its whole group (SIGTERM, then
// SIGKILL after --kill-after) and waits until nothing of it runs. Forwards the signals leasehold
// gets.
CommandEnd watch_command(const Child& child, const KeepAlive& keep_alive,
                         const RunOptions& options) {
  const sigset_t signals = forwarded_signals();
  const pid_t group = child.pid;
  CommandEnd end;
  bool reaped = false;
  for (;;) {
    for (int ended = 0;;) {
      const pid_t pid = waitpid(-1, &ended, WNOHANG);
      if (pid <= 0)
        break;
      if (pid == child.pid) {
        end.status = ended;
        reaped = true;
      }
    }
    // The command ended with the lease held: what it left in the background is not waited for.
    const bool lost = keep_alive.lost();
    if (reaped && !lost && !end.terminated_at)
      break;
    if (lost && !end.terminated_at) {
      // The lease is gone: stop everything the command started, even if the command has ended.
      end.ended_first = reaped;
      kill(-group, SIGTERM);
      end.terminated_at = Clock::now();
    }
    if (end.terminated_at) {
      // Exit only when nothing of the group runs (a member leasehold may not signal, EPERM,
      // cannot be stopped: after the SIGKILL it is given up on). While a member is left, the
      // group's id is not reused, so signalling it reaches no one else.
      if (reaped) {
        const GroupState left = group_state(group);
        if (left == GroupState::gone)
          break;
        if (left == GroupState::out_of_reach && end.killed) {
          end.out_of_reach = true;
          break;
        }
      }
      if (!end.killed && Clock::now() - *end.terminated_at >= options.kill_after) {
        kill(-group, SIGKILL);
        end.killed = true;
      }
    }
    timespec timeout{0, 20'000'000};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP)
      kill(reaped ? -group : child.pid, signal);  // once the command has ended: what is left of it
  }
  return end;
}

// What became of the command when its lease ended under it.
std::string command_fate(const CommandEnd& end) {
  if (!end.terminated_at || end.ended_first)
    return "the command ended on its own (exit " + std::to_string(exit_code_of(end.status)) +
           ") as it was noticed" + (end.killed ? "; what it left running was killed" : "");
  return end.killed ? "the command was killed" : "the command was terminated";
}

void report_out_of_reach(const CommandEnd& end) {
  if (end.out_of_reach)
    warn(
        "some processes of the command's group could not be signalled (not permitted) and may "
        "still run");
}

}  // namespace

int run(const Globals& globals, const RunOptions& options) {
  validate(options, "run");
  if (options.command.empty())
    throw UsageError{options.raw_key
                         ? "run: no COMMAND given (leasehold run --raw-key KEY -- COMMAND ...)"
                         : "run: no COMMAND given (leasehold run NAME -- COMMAND ...)"};
  if (options.max_time < milliseconds::zero())
    throw UsageError{"--max-time: must not be negative"};
  if (!options.raw_key)
    set_holder_label(command_label(options.command));    // who holds it, for status and list
  block_forwarded_signals();                             // before the client starts its thread
  const MetricsFile metrics_file(options.metrics_file);  // written at every return below
  Client redis = connect_or_exit(globals, metrics_file.metrics());

  Taken taken = take_lease(globals, options, redis);
  if (!taken.lease)
    return taken.exit_code;
  const std::string name = lease_name(options);
  chat(globals, "took '" + name + "' (" + taken.lease->kind(options) + ", ttl " +
                    format_duration(options.ttl) + ")");
  std::vector<std::pair<std::string, std::string>> environment = {
      {"LEASEHOLD_NAME", name}, {"LEASEHOLD_TOKEN", taken.lease->token()}};
  if (const auto fence = taken.lease->fence())
    environment.emplace_back("LEASEHOLD_FENCE", std::to_string(*fence));
  LeaseGuard lease = std::move(*taken.lease).guard(redis, options.max_time);
  metrics_file.write();

  // The lease is kept while the command runs; a loss is noticed by the wait loop below.
  const KeepAlive& keep_alive = lease.keep_alive();
  const auto release = [&] { lease.release(); };

#ifdef PR_SET_CHILD_SUBREAPER
  // On Linux leasehold adopts the orphans of the command (a child subreaper) and reaps them:
  // a zombie still counts as a member of its group, and init may reap it late.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  const Child child = spawn_child(options.command, environment);
  if (child.pid < 0) {
    release();
    return report_spawn_failure(options.command.front(), child.spawn_error);
  }

  const TerminalHandover terminal(child.pid);
  const CommandEnd end = watch_command(child, keep_alive, options);
  // A lost lease is given back only now: one lost because an extension came too late may still
  // stand in Redis, and it then keeps others out while the group stops (releasing a lease that
  // is no longer ours removes nothing).
  release();
  if (keep_alive.lost() && keep_alive.cause() == errc::hold_budget_exceeded) {
    warn("'" + name + "': the command ran past --max-time " + format_duration(options.max_time) +
         "; " + command_fate(end) + " (the lease is given back)");
    report_out_of_reach(end);
    return kExitTimedOut;
  }
  if (keep_alive.lost()) {
    warn("lost the lease on '" + name + "' (" + loss_reason(keep_alive.cause()) + "); " +
         command_fate(end));
    report_out_of_reach(end);
    return kExitLeaseLost;
  }
  return exit_code_of(end.status);
}

}  // namespace leasehold::cli
