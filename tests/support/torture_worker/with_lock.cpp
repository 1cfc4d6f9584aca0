// The with-lock mode: threads running with_lock on a counter (main.cpp).
#include <unistd.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "worker.hpp"

namespace leasehold::testing::torture_worker {

int run_with_lock(const Options& options) {
  const Recorder recorder(options.text("out"));
  leasehold::Client redis(options.text("url"));
  const std::string prefix = options.text("prefix", "torture");
  leasehold::Locker locker(redis, prefix);
  const auto names = options.names();
  const auto hold = std::chrono::microseconds(options.number("hold-us", 500));
  const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
  const std::string stop_file = options.text("stop-file");
  const auto running = [&] {
    return monotonic_ns() < end && (stop_file.empty() || ::access(stop_file.c_str(), F_OK) != 0);
  };
  leasehold::WithLockOptions lock_options;
  lock_options.ttl = ms(options.number("ttl-ms", 2000));
  lock_options.retry_attempts = leasehold::WithLockOptions::forever;
  lock_options.retry_delay = ms(options.number("retry-ms", 2));

  // A thread's first name is given (`first-name` + its index, round the list), so that a run's
  // threads start spread over every name; the later ones are random.
  auto thread_main = [&](unsigned seed, std::size_t first) {
    std::mt19937 random(seed);
    std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
    for (bool first_pick = true; running(); first_pick = false) {
      const std::string& name = names[first_pick ? first % names.size() : pick(random)];
      const std::string counter = prefix + ":counter:" + name;
      std::atomic<std::int64_t> lost_at{0};
      // The section's lease is granted between this call and its cs_begin (with_lock retries
      // in between and does not show its lease).
      recorder.record({.kind = EventKind::acquire_call, .name = name});
      try {
        locker.with_lock(
            name,
            [&](std::stop_token stop) {
              std::stop_callback on_loss(stop, [&] { lost_at = monotonic_ns(); });
              recorder.record({.kind = EventKind::cs_begin, .name = name});
              try {
                const long long current = read_counter(redis, counter);
                hold_until(monotonic_ns() + std::chrono::nanoseconds(hold).count(),
                           [&] { return !stop.stop_requested(); });
                if (!stop.stop_requested())
                  write_counter(redis, recorder, name, 0, counter, current);
                recorder.record(
                    {.kind = EventKind::cs_end, .name = name, .valid = !stop.stop_requested()});
              } catch (const leasehold::Error& e) {
                recorder.record(
                    {.kind = EventKind::cs_end, .name = name, .detail = as_word(e.what())});
              }
            },
            lock_options);
      } catch (const leasehold::LockLostError& e) {
        record_loss(recorder, lost_at, name, 0, 'w', e.cause());
      } catch (const leasehold::Error& e) {
        recorder.record(
            {.kind = EventKind::acquire_unknown, .name = name, .detail = as_word(e.what())});
      }
    }
  };
  const auto first_name = static_cast<std::size_t>(options.number("first-name", 0));
  run_threads(static_cast<int>(options.number("threads", 1)), [&](unsigned seed, int t) {
    thread_main(seed, first_name + static_cast<std::size_t>(t));
  });
  return 0;
}

}  // namespace leasehold::testing::torture_worker
