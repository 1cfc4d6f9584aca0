// Supervising the work done under a lease. For `run` and `cron`, a command in its own process
// group: the signals leasehold gets are passed on to it, and its whole group is stopped —
// SIGTERM, then SIGKILL after --kill-after — when the lease is lost or the command has run for
// --max-time. For `hold`, the holding itself: it ends at the same two stops, or at a signal.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "cli.hpp"

namespace leasehold::cli {

struct Supervision {
  // The command's budget, counted from its start: past it, its group is stopped (zero: none).
  // The lease stays held, and extended, until the group is gone.
  std::chrono::milliseconds max_time{0};
  std::chrono::milliseconds kill_after{5'000};
  // Asked as the command runs: true once its lease is lost (its group is then stopped).
  std::function<bool()> lost;
  // Whether the supervising thread takes the signals leasehold passes on (SIGINT, SIGTERM,
  // SIGHUP) and gives them to the command; otherwise another thread does.
  bool forward_signals = true;
  // Whether leasehold adopted the command's orphans (a child subreaper), which it then reaps: a
  // zombie still counts as a member of its group.
  bool reaps_orphans = false;
};

enum class StopCause { none, lost, max_time };

// How the command's group ended.
struct CommandEnd {
  int status = 0;                       // the command's, from waitpid
  StopCause stopped = StopCause::none;  // why its group was stopped, if it was
  bool ended_first = false;   // the command had ended on its own when its group was stopped
  bool killed = false;        // the group needed the SIGKILL
  bool out_of_reach = false;  // members of the group could not be signalled
};

// Waits for the command `child` (the leader of its own group). A command that ends while its
// lease is held is done: what it left in the background is not waited for. Stopped (lost lease,
// --max-time), it is done once nothing of its group runs — a member leasehold may not signal is
// given up on after the SIGKILL. Its watchdog is dismissed on the way out.
CommandEnd supervise(Child& child, const Supervision& supervision);

// Holds until a stop (the lease lost, --max-time from the start) or until leasehold gets a
// signal it would pass on (SIGINT, SIGTERM, SIGHUP) or, when `input_ended` is given, it answers
// true: StopCause::none then. Only `lost` and `max_time` of `supervision` count; the signals must
// be blocked.
StopCause hold_until_stopped(const Supervision& supervision,
                             const std::function<bool()>& input_ended);

// What became of a stopped command: "the command was terminated", "… was killed", or "the
// command ended on its own (exit N) as it was noticed".
std::string command_fate(const CommandEnd& end);
// Warns when members of the group could not be signalled.
void report_out_of_reach(const CommandEnd& end);

}  // namespace leasehold::cli
