// Observer: what happens to leases, told as it happens, for metrics and logs.
//
//   auto metrics = std::make_shared<leasehold::Metrics>();      // metrics.hpp: Prometheus text
//   leasehold::ClientOptions options;
//   options.observer = metrics;
//   leasehold::Client redis(url, options);
//   ...
//   serve("/metrics", metrics->prometheus_text());
//
// Set on a Client (ClientOptions::observer), an observer sees what is done with that client,
// whoever does it: every acquire (a try_lock and its kin as one try, a wait in turn as one
// acquire from its start to its outcome), release and extension of a lease (the caller's own, a
// guard's, a keep-alive's), losses reported by keep-alives, cron ticks, and reconnects. Unset, it
// costs one pointer test at each of those points.
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

// An acquire, as it ended: one try (try_lock, try_read, try_write, try_acquire), or a wait in turn
// (lock_until and its kin, with_lock, Mutex); `waited` from its start to its outcome.
struct AcquireEvent {
  enum class Outcome {
    acquired,   // the lease is the caller's
    busy,       // held by another at the try (or until the wait's deadline)
    failed,     // Redis failed (the caller gets the error)
    cancelled,  // stopped or cancelled by the caller, or the client shut down
  };
  std::string_view key;
  Outcome outcome;
  Clock::duration waited;
};

// A lease's release by its token (release(), a guard's end), as Redis answered it.
struct ReleaseEvent {
  enum class Outcome {
    released,  // it was held, and is free now
    lost,      // it had run out or was taken over before the release came
    failed,    // Redis failed or did not answer: the lease ends at its TTL at the latest
  };
  std::string_view key;
  Outcome outcome;
  Clock::duration held_for;  // from its acquire to the release's answer
};

// One extension (extend(), a keep-alive's): `time_left` is how long the lease had when it was
// sent, by this process's clock.
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

}  // namespace leasehold
