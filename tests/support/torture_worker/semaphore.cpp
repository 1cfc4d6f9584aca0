// The semaphore mode: threads taking a Semaphore's permits (main.cpp).
#include <unistd.h>

#include <atomic>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "worker.hpp"

namespace leasehold::testing::torture_worker {

namespace {

struct SemaphoreWorker {
  using Semaphore = leasehold::Semaphore<std::string>;
  using Token = leasehold::PermitToken<Semaphore>;

  const Options& options;
  const Recorder recorder{options.text("out")};
  leasehold::Client redis{options.text("url")};
  const std::string prefix = options.text("prefix", "torture");
  const Semaphore semaphore{"torture", static_cast<std::uint32_t>(options.number("permits", 2)),
                            ms(options.number("ttl-ms", 1000)), prefix};
  const std::vector<std::string> names = options.names();
  const std::chrono::milliseconds retry = ms(options.number("retry-ms", 10));
  const std::chrono::milliseconds wait = ms(options.number("wait-ms", 0));
  const bool occupancy = options.flag("occupancy");
  std::atomic<std::uint64_t> next_lease{0};

  explicit SemaphoreWorker(const Options& o) : options(o) {}

  // One acquire (a wait in turn of --wait-ms, or one try); the permit if granted.
  std::optional<Token> attempt(const std::string& name, std::uint64_t lease) {
    recorder.record({.kind = EventKind::acquire_call, .name = name, .lease = lease, .mode = 'p'});
    try {
      auto token = wait.count() > 0 ? leasehold::acquire_for(redis, semaphore, name, wait)
                                    : redis.process(semaphore.try_acquire(name));
      if (!token) {
        recorder.record(
            {.kind = EventKind::acquire_fail, .name = name, .lease = lease, .mode = 'p'});
        return std::nullopt;
      }
      recorder.record({.kind = EventKind::acquire_ok,
                       .name = name,
                       .lease = lease,
                       .mode = 'p',
                       .deadline = to_monotonic_ns(token->deadline()),
                       .value = semaphore.permits()});
      return token;
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::acquire_unknown,
                       .name = name,
                       .lease = lease,
                       .mode = 'p',
                       .detail = as_word(e.what())});
      return std::nullopt;
    }
  }

  // The section under while_held; with --occupancy it counts itself in and out at Redis (INCR and
  // DECR of "<prefix>:inside:<name>"), recording the count it found.
  void section(const Token& token, const std::string& name, std::uint64_t lease,
               std::chrono::milliseconds length) {
    std::atomic<std::int64_t> lost_at{0};
    ExtensionWatch observe(recorder, token, name, lease, 'p');
    const std::string inside = prefix + ":inside:" + name;
    std::int64_t ended = 0;
    std::string error;
    const auto held = leasehold::while_held(redis, token, [&](std::stop_token stop) {
      std::stop_callback on_loss(stop, [&] { lost_at = monotonic_ns(); });
      recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease, .mode = 'p'});
      try {
        if (occupancy) {
          const auto count = redis.process(leasehold::Command{"INCR", inside});
          recorder.record({.kind = EventKind::occupancy,
                           .name = name,
                           .lease = lease,
                           .mode = 'p',
                           .value = count.integer});
        }
        hold_until(monotonic_ns() + std::chrono::nanoseconds(length).count(), [&] {
          observe();
          return !stop.stop_requested();
        });
        observe();
        ended = monotonic_ns();
        if (occupancy)
          redis.process(leasehold::Command{"DECR", inside});
      } catch (const leasehold::Error& e) {
        error = as_word(e.what());
        ended = monotonic_ns();
      }
    });
    recorder.record({.t = ended,
                     .kind = EventKind::cs_end,
                     .name = name,
                     .lease = lease,
                     .mode = 'p',
                     .valid = !held.was_lost() && error.empty(),
                     .detail = error});
    if (held.was_lost())
      record_loss(recorder, lost_at, name, lease, 'p', held.loss_cause());
  }

  void release(const Token& token, const std::string& name, std::uint64_t lease) {
    release_and_record(redis, recorder, token, name, lease, 'p');
  }

  int run() {
    const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
    const auto cs_range = options.text("cs-ms", "10");
    const auto colon = cs_range.find(':');
    const long long cs_min = std::stoll(cs_range.substr(0, colon));
    const long long cs_max =
        std::stoll(colon == std::string::npos ? cs_range : cs_range.substr(colon + 1));
    const auto thread_main = [&](unsigned seed) {
      std::mt19937 random(seed);
      std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
      std::uniform_int_distribution<long long> cs_length(cs_min, cs_max);
      while (monotonic_ns() < end) {
        const std::string& name = names[pick(random)];
        const std::uint64_t lease = ++next_lease;
        const auto token = attempt(name, lease);
        if (!token) {
          if (wait.count() == 0)
            std::this_thread::sleep_for(retry);  // between tries
          continue;
        }
        section(*token, name, lease, ms(cs_length(random)));
        release(*token, name, lease);
      }
    };
    run_threads(static_cast<int>(options.number("threads", 2)),
                [&](unsigned seed, int) { thread_main(seed); });
    return 0;
  }
};

}  // namespace

int run_semaphore(const Options& options) {
  return SemaphoreWorker(options).run();
}

}  // namespace leasehold::testing::torture_worker
