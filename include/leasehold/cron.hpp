// Cron jobs on several replicas.
//
// Every replica runs a Scheduler with the same jobs, each on that replica's own clock, starting
// with a run at startup. Wrapped in once_per_interval, a job takes a lease that covers most of the
// interval at every tick and never releases it: across all replicas it runs at most once per
// interval. See docs/cron.md.
//
//   leasehold::cron::Scheduler scheduler;
//   scheduler.add("hourly-report", leasehold::cron::AtLeast{1h},
//                 leasehold::cron::once_per_interval(redis, "hourly-report", 1h, send_report,
//                                                    {.lease = 55min}));
//   auto running = scheduler.start();
//   ...
//   running.shutdown();   // stops scheduling, waits for runs in progress
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <variant>
#include <vector>

#include "leasehold/client.hpp"
#include "leasehold/describe.hpp"
#include "leasehold/detail/cron.hpp"
#include "leasehold/lock.hpp"

namespace leasehold::cron {

// Starts at least `every` apart, never overlapping (a slow run delays the next).
struct AtLeast {
  Clock::duration every;
};
// The next start is `every` after the previous run ended.
struct AfterFinish {
  Clock::duration every;
};
// The next start is `every` after the previous one was scheduled: a slow run overlaps the next,
// and runs may fire slightly less than `every` apart.
struct AfterStart {
  Clock::duration every;
};
using Interval = std::variant<AtLeast, AfterFinish, AfterStart>;

Clock::duration period(const Interval& interval);

// What a run receives: when it was scheduled, and its number (the first run is 1).
struct Tick {
  Clock::time_point scheduled;
  std::uint64_t run = 0;
  // In an aligned once_per_interval job: the server-time slot this run holds the lease for. The
  // slot covers the server's time [slot * interval, (slot + 1) * interval) since the Unix epoch;
  // it is the one to act on, as the run itself may start in the next slot. Empty otherwise.
  std::optional<std::int64_t> slot;
};

// A job returns success (an empty error_code) or an error; errors and exceptions are logged and
// the job keeps its schedule.
using Job = std::function<std::error_code(const Tick&)>;

// The schedule of one job as a pure state machine: no clock, no threads; time is an argument.
class Schedule {
 public:
  Schedule(Interval interval, Clock::time_point first);

  // When the next run may start; Clock::time_point::max() while it waits for a run to finish.
  Clock::time_point due() const noexcept;
  bool can_start(Clock::time_point now) const noexcept;
  // Records a start at `now` (requires can_start(now)) and returns its tick.
  Tick start(Clock::time_point now);
  void finish(Clock::time_point now);
  int running() const noexcept { return running_; }

 private:
  Interval interval_;
  Clock::time_point next_;
  int running_ = 0;
  std::uint64_t runs_ = 0;
};

class Scheduler {
 public:
  Scheduler() = default;

  // Registers a job (before start()). `job` may return void or std::error_code, and may take the
  // Tick or nothing.
  template <class F>
  Scheduler& add(std::string name, Interval interval, F job) {
    return add_job(std::move(name), interval, detail::adapt_job(std::move(job)));
  }

  // Stops scheduling and waits for runs in progress when shut down (or destroyed).
  class Running {
   public:
    Running(Running&&) noexcept = default;
    Running& operator=(Running&&) noexcept = default;
    ~Running();
    // Stops scheduling (no run starts after this returns) and waits for runs in progress.
    void shutdown();

   private:
    friend class Scheduler;
    struct State;
    explicit Running(std::shared_ptr<State> state) : state_(std::move(state)) {}
    std::shared_ptr<State> state_;
  };

  // Starts every job now (its first run is at startup), each on a thread of its own.
  Running start();

 private:
  Scheduler& add_job(std::string name, Interval interval, Job job);

  struct Entry {
    std::string name;
    Interval interval;
    Job job;
  };
  std::vector<Entry> entries_;
};

// Aligned mode: how far the Redis server's clock may fall back (in total, however many steps)
// without a slot running twice. A job's keys live this long plus one interval after its latest
// claim.
inline constexpr std::chrono::hours kAlignedStepBack{24};

struct OncePerIntervalOptions {
  // The lease taken at each tick and never released. Must be shorter than the interval; zero
  // means 90% of the interval.
  std::chrono::milliseconds lease{0};
  // Keep the lease extended (while_held) while a run outlasts it.
  bool extend_while_running = false;
  // Name the interval slot by the Redis server's TIME (slot = server time / interval), so that
  // replica clock skew cannot make two replicas run one slot. A job's highest slot claimed is
  // kept, so that a slot runs at most once even when the server's clock steps back (up to
  // kAlignedStepBack; docs/cron.md). The lease option is not used for the claim then.
  bool aligned = false;
  std::string prefix = std::string(kDefaultPrefix);
};

// An interval's lease, as this replica took it.
struct IntervalClaim {
  // The lease. In aligned mode it stands for the claim of `slot`: release() gives the slot back
  // (another replica's claim in that slot is then granted) until a later slot is claimed, which
  // takes the lease over (release() then answers false). Its TTL is that of the job's keys,
  // kAlignedStepBack plus the interval.
  LockToken<Lock<std::string>> token;
  // Aligned mode: the server-time slot the lease is for (see Tick::slot). Empty otherwise.
  std::optional<std::int64_t> slot;
};

// The seed's pattern as an object: at each tick, claim() takes this interval's lease, or finds
// that another replica holds it.
class IntervalLease {
 public:
  // Throws Error(errc::invalid_argument) if the lease is not shorter than the interval.
  IntervalLease(Client& redis, std::string name, Clock::duration interval,
                OncePerIntervalOptions options = {});

  // The lease for this interval if this replica took it (it is never released: it expires on
  // its own), nothing if another replica holds it. Throws Error if Redis fails. Aligned: one
  // script call that reads the server's TIME and grants the slot it falls in only if no slot at
  // or above it was claimed (unless that very slot was given back).
  std::optional<IntervalClaim> claim();

  std::chrono::milliseconds lease() const noexcept { return lease_; }
  Clock::duration interval() const noexcept { return interval_; }
  const OncePerIntervalOptions& options() const noexcept { return options_; }
  Client& client() const noexcept { return redis_; }
  const std::string& name() const noexcept { return name_; }

 private:
  Client& redis_;
  std::string name_;
  Clock::duration interval_;
  std::chrono::milliseconds lease_;
  OncePerIntervalOptions options_;
  // Aligned mode: the job's keys (docs/cron.md), in one cluster slot.
  std::string slot_key_;  // the lease of the latest slot claimed: its holder's id
  std::string high_key_;  // the highest slot claimed
  std::chrono::milliseconds keys_ttl_{0};
};

// Every key a once-per-interval job named `name` keeps under `prefix`, in either mode
// (docs/cron.md), grouped by hash slot: the interval's lease; aligned mode's slot lease and
// highest slot claimed. For status tools (foreign_keys(), describe.hpp).
std::vector<std::vector<LeaseKey>> once_per_interval_keys(const std::string& name,
                                                          std::string_view prefix = kDefaultPrefix);

// Wraps `job` so that across every replica running it, it runs at most once per interval: a
// replica that finds the interval's lease held skips the tick (logged at info level).
template <class F>
Job once_per_interval(Client& redis, std::string name, Clock::duration interval, F job,
                      OncePerIntervalOptions options = {});

template <class F>
Job once_per_interval(Client& redis, std::string name, Clock::duration interval, F job,
                      OncePerIntervalOptions options) {
  auto lease =
      std::make_shared<IntervalLease>(redis, std::move(name), interval, std::move(options));
  return detail::once_per_interval_job(std::move(lease), detail::adapt_job(std::move(job)));
}

}  // namespace leasehold::cron
