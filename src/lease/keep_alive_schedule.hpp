// What the keep-alive of one lease does next, decided from the outcomes and times it is given:
// no timers, no I/O, no threads. KeepAlive (keep_alive.cpp) performs the steps.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <system_error>

#include "leasehold/clock.hpp"
#include "leasehold/error.hpp"
#include "leasehold/lease.hpp"

namespace leasehold::detail {

class KeepAliveSchedule {
 public:
  struct Step {
    enum class Kind { extend_at, lost };
    Kind kind = Kind::extend_at;
    Clock::time_point at;         // extend_at: when the next extension is due
    bool deadline_moved = false;  // extend_at: the deadline timer is to be set again
    std::error_code cause;  // lost: the error of the last failed extension; empty when the lease
                            // expired or was taken over
  };

  explicit KeepAliveSchedule(std::chrono::milliseconds ttl) : ttl_(ttl) {}

  // At the start: the first extension, a third of the TTL after the last grant (counted from the
  // deadline; at once when that moment has passed).
  Step start(Clock::time_point deadline) const {
    return extend_at(next_extension(deadline, ttl_), false);
  }

  // An extension's outcome at `now`, with the lease's deadline as it stands (moved by a grant).
  Step extended(std::error_code ec, bool held, Clock::time_point now, Clock::time_point deadline) {
    if (ec == errc::closed || ec == errc::auth_failed || ec == errc::select_failed) {
      // The client will never answer again: waiting for the deadline would only keep its thread.
      last_error_ = ec;
      return lost();
    }
    if (ec) {
      // Uncertain: the lease may still be ours. Try again until the deadline says otherwise.
      last_error_ = ec;
      return extend_at(now + retry_delay(), false);
    }
    last_error_ = {};  // held, or expired or taken over: either way the cause is not an error
    if (!held)
      return lost();
    return extend_at(next_extension(deadline, ttl_), true);
  }

  // The deadline timer fired at `now`: lost if the deadline has passed; nothing if an extension
  // moved it meanwhile (the timer is set again for the new one).
  std::optional<Step> deadline_reached(Clock::time_point now, Clock::time_point deadline) const {
    if (now < deadline)
      return std::nullopt;
    return lost();
  }

  // How soon a failed extension is tried again: often enough to get several tries in before the
  // deadline, rarely enough not to hammer a struggling server.
  Clock::duration retry_delay() const {
    return std::clamp<Clock::duration>(ttl_ / 10, std::chrono::milliseconds(5),
                                       std::chrono::milliseconds(250));
  }

 private:
  static Step extend_at(Clock::time_point at, bool deadline_moved) {
    Step step;
    step.at = at;
    step.deadline_moved = deadline_moved;
    return step;
  }
  Step lost() const {
    Step step;
    step.kind = Step::Kind::lost;
    step.cause = last_error_;
    return step;
  }

  std::chrono::milliseconds ttl_;
  std::error_code last_error_;
};

}  // namespace leasehold::detail
