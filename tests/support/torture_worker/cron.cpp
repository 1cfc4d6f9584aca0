// The cron mode: a cron::Scheduler job claiming an interval lease at each tick (main.cpp).
#include <unistd.h>

#include <string>
#include <thread>

#include "worker.hpp"

namespace leasehold::testing::torture_worker {

int run_cron(const Options& options) {
  const Recorder recorder(options.text("out"));
  leasehold::Client redis(options.text("url"));
  const std::string name = options.names().front();
  const auto interval = ms(options.number("interval-ms", 400));
  const auto run_length = ms(options.number("run-ms", 50));
  leasehold::cron::OncePerIntervalOptions lease_options;
  lease_options.lease = ms(options.number("lease-ms", 300));
  lease_options.prefix = options.text("prefix", "torture");
  leasehold::cron::IntervalLease interval_lease(redis, name, interval, lease_options);
  leasehold::cron::Scheduler scheduler;
  std::atomic<std::uint64_t> next_lease{0};
  // once_per_interval's steps, with the moment before the claim recorded: the claim's grant lies
  // between that and its answer.
  scheduler.add(name, leasehold::cron::AtLeast{interval}, [&](const leasehold::cron::Tick&) {
    const std::uint64_t lease = ++next_lease;
    recorder.record({.kind = EventKind::acquire_call, .name = name, .lease = lease});
    std::optional<leasehold::cron::IntervalClaim> claim;
    try {
      claim = interval_lease.claim();
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::acquire_unknown,
                       .name = name,
                       .lease = lease,
                       .detail = as_word(e.what())});
      return;
    }
    if (!claim) {
      recorder.record({.kind = EventKind::acquire_fail, .name = name, .lease = lease});
      return;
    }
    recorder.record({.kind = EventKind::acquire_ok,
                     .name = name,
                     .lease = lease,
                     .deadline = to_monotonic_ns(claim->token.deadline())});
    recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease});
    std::this_thread::sleep_for(run_length);  // the job's work
    recorder.record({.kind = EventKind::cs_end,
                     .name = name,
                     .lease = lease,
                     .valid = !claim->token.expired()});
  });
  auto running = scheduler.start();
  std::this_thread::sleep_for(ms(options.number("duration-ms", 1000)));  // the replica's life
  running.shutdown();
  return 0;
}

}  // namespace leasehold::testing::torture_worker
