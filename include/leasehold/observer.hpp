// Observer: what happens to leases, told as it happens, for metrics and logs.
//
//   auto metrics = std::make_shared<leasehold::Metrics>();      // metrics.hpp: Prometheus text
//   leasehold::ClientOptions options;
//   options.observer = metrics;
//   leasehold::Client redis(url, options);
//   ...
//   serve("/metrics", metrics->prometheus_text());
//
// Set on a Client (ClientOptions::observer), an observer sees what the library does with that
// client: waiting acquires (lock_until and its kin, with_lock, Mutex), releases and losses of
// guarded leases (with_lock, Mutex, LeaseGuard), extensions by keep-alives (while_held too), cron
// ticks, and reconnects. A query a caller runs itself (try_lock, release) is the caller's to
// count. Unset, it costs one pointer test at each of those points.
//
// The calls come from the callers' threads and from the client's I/O thread, possibly at once:
// an observer must be thread-safe, quick (it runs inside the library's own work), and must not
// throw (what it throws is dropped). Events name the lease's key; the strings they point to live
// for the call only.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>
#include <system_error>

#include "leasehold/clock.hpp"

namespace leasehold {

// An acquire that may wait, as it ended: `waited` from its start to its outcome.
struct AcquireEvent {
  enum class Outcome {
    acquired,   // the lease is the caller's
    busy,       // held by another until the wait's deadline (or at the one attempt)
    failed,     // Redis failed (the caller gets the error)
    cancelled,  // stopped or cancelled by the caller, or the client shut down
  };
  std::string_view key;
  Outcome outcome;
  Clock::duration waited;
};

// A guarded lease that ended: released by its holder, or lost while held (expired, taken over,
// unreachable until its deadline) and then given up.
struct ReleaseEvent {
  enum class Outcome { released, lost };
  std::string_view key;
  Outcome outcome;
  Clock::duration held_for;  // from the guard's start to its end
};

// One extension by a keep-alive: `time_left` is how long the lease had before it, by this
// process's clock.
struct ExtensionEvent {
  enum class Outcome {
    extended,  // restarted for another TTL
    refused,   // the lease had run out or was taken over: lost
    failed,    // Redis did not answer in time or failed: retried until the deadline
  };
  std::string_view key;
  Outcome outcome;
  Clock::duration time_left;
};

// A lease a keep-alive reports lost, and why.
struct LossEvent {
  enum class Cause {
    expired_or_taken_over,  // an extension found the key gone or another holder's
    unreachable,            // Redis did not answer before the lease's deadline
    closed,                 // the client closed, or Redis refused it (AUTH, ACL)
    hold_budget,            // held for its whole max_hold: extensions stopped
  };
  std::string_view key;
  Cause cause;
  std::error_code error;  // the last failure, for unreachable and closed
};

// One tick of a cron job.
struct CronTickEvent {
  enum class Outcome {
    ran,      // this process held the interval and ran the job (it returned or threw)
    skipped,  // another process holds the interval
    failed,   // the claim failed (Redis unreachable, a key of another type)
  };
  std::string_view job;
  Outcome outcome;
  Clock::duration duration;  // of the run; zero when it did not run
};

// A waiting acquire refused because another holds the lease or is ahead: `position` is its place
// in the name's queue (1: the head), as Redis counted it at that try.
struct WaitEvent {
  std::string_view key;
  std::size_t position;
};

// A connection to a Redis server was lost and is being made again.
struct ReconnectEvent {
  std::string_view server;  // host:port or the unix socket's path
  std::error_code cause;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_acquire(const AcquireEvent&) {}
  virtual void on_release(const ReleaseEvent&) {}
  virtual void on_extension(const ExtensionEvent&) {}
  virtual void on_loss(const LossEvent&) {}
  virtual void on_cron_tick(const CronTickEvent&) {}
  virtual void on_wait(const WaitEvent&) {}
  virtual void on_reconnect(const ReconnectEvent&) {}
};

namespace detail {
// Calls `event` on `observer` if there is one, dropping whatever it throws.
template <class Event>
void tell(Observer* observer, void (Observer::*method)(const Event&), const Event& event) noexcept {
  if (observer == nullptr)
    return;
  try {
    (observer->*method)(event);
  } catch (...) {
    // An observer's failure is not the lease's.
  }
}
}  // namespace detail

}  // namespace leasehold
