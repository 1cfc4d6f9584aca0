// Supervising the work under a lease: one loop for the commands of `run` and `cron`, and the
// same stops for `hold`.
#include "supervise.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>

namespace leasehold::cli {
namespace {

// How often the loops look: a lost lease or a spent budget is acted on within this.
constexpr long kPaceNs = 20'000'000;

bool past_budget(const Supervision& supervision, Clock::time_point started) {
  return supervision.max_time > std::chrono::milliseconds::zero() &&
         Clock::now() - started >= supervision.max_time;
}

bool passed_on(int signal) {
  return signal == SIGINT || signal == SIGTERM || signal == SIGHUP;
}

enum class GroupState { gone, running, out_of_reach };

// What is left of a process group: kill(-group, 0) finds a member (a zombie too), none (ESRCH),
// or only members leasehold may not signal (EPERM).
GroupState group_state(pid_t group) {
  if (::kill(-group, 0) == 0)
    return GroupState::running;
  return errno == EPERM ? GroupState::out_of_reach : GroupState::gone;
}

// Reaps what ended: the command, and the orphans it left when leasehold adopted them. True once
// the command was reaped (its status in `end`).
bool reap(const Child& child, const Supervision& supervision, CommandEnd& end) {
  bool reaped = false;
  for (int status = 0;;) {
    const pid_t pid = waitpid(supervision.reaps_orphans ? -1 : child.pid, &status, WNOHANG);
    if (pid < 0 && errno == ECHILD)
      return true;  // nothing left to wait for: the command is gone
    if (pid <= 0)
      return reaped;
    if (pid == child.pid) {
      end.status = status;
      reaped = true;
    }
  }
}

// Paces the loop; passes on a signal leasehold got, to the command or, once it has ended, to
// what is left of its group.
void pace(const Child& child, const Supervision& supervision, bool reaped) {
  timespec pause{0, kPaceNs};
  if (!supervision.forward_signals) {
    nanosleep(&pause, nullptr);
    return;
  }
  const sigset_t signals = forwarded_signals();
  const int signal = sigtimedwait(&signals, nullptr, &pause);
  if (passed_on(signal))
    kill(reaped ? -child.pid : child.pid, signal);
}

}  // namespace

CommandEnd supervise(Child& child, const Supervision& supervision) {
  const pid_t group = child.pid;
  const Clock::time_point started = Clock::now();
  std::optional<Clock::time_point> terminated_at;
  CommandEnd end;
  bool reaped = false;
  for (;;) {
    reaped = reap(child, supervision, end) || reaped;
    if (!terminated_at) {
      const bool lost = supervision.lost && supervision.lost();
      // The command ended with its lease held and in time: done.
      if (reaped && !lost)
        break;
      if (lost || past_budget(supervision, started)) {
        // Stop everything the command started, even if the command itself has ended.
        end.stopped = lost ? StopCause::lost : StopCause::max_time;
        end.ended_first = reaped;
        kill(-group, SIGTERM);
        terminated_at = Clock::now();
      }
    }
    if (terminated_at) {
      // Done only when nothing of the group runs. While a member is left, the group's id is not
      // reused, so signalling it reaches no one else.
      if (reaped) {
        const GroupState left = group_state(group);
        if (left == GroupState::gone)
          break;
        if (left == GroupState::out_of_reach && end.killed) {
          end.out_of_reach = true;
          break;
        }
      }
      if (!end.killed && Clock::now() - *terminated_at >= supervision.kill_after) {
        kill(-group, SIGKILL);
        end.killed = true;
      }
    }
    pace(child, supervision, reaped);
  }
  dismiss(child.watchdog);
  return end;
}

StopCause hold_until_stopped(const Supervision& supervision,
                             const std::function<bool()>& input_ended) {
  const Clock::time_point started = Clock::now();
  const sigset_t signals = forwarded_signals();
  for (;;) {
    if (supervision.lost && supervision.lost())
      return StopCause::lost;
    if (past_budget(supervision, started))
      return StopCause::max_time;
    if (input_ended && input_ended())
      return StopCause::none;
    timespec pause{0, kPaceNs};
    if (passed_on(sigtimedwait(&signals, nullptr, &pause)))
      return StopCause::none;
  }
}

std::string command_fate(const CommandEnd& end) {
  if (end.stopped == StopCause::none || end.ended_first)
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

}  // namespace leasehold::cli
