// The rwlock mode: readers and writers of an RwLock on a counter (main.cpp).
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

struct RwLockWorker {
  using RwLock = leasehold::RwLock<std::string>;

  const Options& options;
  const Recorder recorder{options.text("out")};
  leasehold::Client redis{options.text("url")};
  const std::string prefix = options.text("prefix", "torture");
  const RwLock lock = make_lock(options, prefix);
  const bool fence = options.flag("fence");
  const std::vector<std::string> names = options.names();
  const std::chrono::milliseconds retry = ms(options.number("retry-ms", 2));
  const std::chrono::microseconds write_hold{options.number("hold-us", 500)};
  const std::chrono::microseconds read_hold{options.number("read-hold-us", 2000)};
  const std::chrono::milliseconds write_pause = ms(options.number("write-pause-ms", 0));
  std::atomic<std::uint64_t> next_lease{0};

  explicit RwLockWorker(const Options& o) : options(o) {}

  static RwLock make_lock(const Options& o, const std::string& prefix) {
    RwLock lock("torture", ms(o.number("ttl-ms", 2000)), prefix);
    if (o.flag("writer-preference-ms"))
      lock = lock.with_writer_preference(ms(o.number("writer-preference-ms", 0)));
    if (o.flag("fence"))
      lock = lock.with_fencing();
    return lock;
  }

  // One attempt with `query` (try_read or try_write); true if it was granted and its section ran.
  template <class Query>
  bool attempt(const Query& query, const std::string& name, char mode) {
    const std::uint64_t lease = ++next_lease;
    recorder.record({.kind = EventKind::acquire_call, .name = name, .lease = lease, .mode = mode});
    decltype(redis.process(query)) token;
    try {
      token = redis.process(query);
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::acquire_unknown,
                       .name = name,
                       .lease = lease,
                       .mode = mode,
                       .detail = as_word(e.what())});
      return false;
    }
    if (!token) {
      recorder.record(
          {.kind = EventKind::acquire_fail, .name = name, .lease = lease, .mode = mode});
      return false;
    }
    recorder.record({.kind = EventKind::acquire_ok,
                     .name = name,
                     .lease = lease,
                     .mode = mode,
                     .deadline = to_monotonic_ns(token->deadline())});
    section(*token, name, lease, mode);
    release_and_record(redis, recorder, *token, name, lease, mode);
    return true;
  }

  // The section under while_held. Its end is recorded once while_held has returned, as valid if
  // while_held said the lease was held: that is the library's verdict on the whole section.
  template <class Token>
  void section(const Token& token, const std::string& name, std::uint64_t lease, char mode) {
    const std::string counter = prefix + ":counter:" + name;
    std::atomic<std::int64_t> lost_at{0};
    ExtensionWatch observe(recorder, token, name, lease, mode);
    std::int64_t ended = 0;
    std::string error;
    const auto held = leasehold::while_held(redis, token, [&](std::stop_token stop) {
      std::stop_callback on_loss(stop, [&] { lost_at = monotonic_ns(); });
      recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease, .mode = mode});
      try {
        const long long first = read_counter(redis, counter);
        const auto hold = mode == 'r' ? read_hold : write_hold;
        hold_until(monotonic_ns() + std::chrono::nanoseconds(hold).count(), [&] {
          observe();
          return !stop.stop_requested();
        });
        if (mode == 'r') {
          recorder.record({.kind = EventKind::counter_check,
                           .name = name,
                           .lease = lease,
                           .mode = mode,
                           .value = read_counter(redis, counter),
                           .read = first});
        } else if (!stop.stop_requested() && !token.expired()) {
          write(token, name, lease, counter, first);
        }
      } catch (const leasehold::Error& e) {
        error = as_word(e.what());
      }
      observe();
      ended = monotonic_ns();
    });
    recorder.record({.t = ended,
                     .kind = EventKind::cs_end,
                     .name = name,
                     .lease = lease,
                     .mode = mode,
                     .valid = !held.was_lost() && error.empty(),
                     .detail = error});
    if (held.was_lost())
      record_loss(recorder, lost_at, name, lease, mode, held.loss_cause());
  }

  // A writer's counter write (read + 1), then with --fence its fenced write.
  template <class Token>
  void write(const Token& token, const std::string& name, std::uint64_t lease,
             const std::string& counter, long long read) {
    write_counter(redis, recorder, name, lease, counter, read);
    if (!fence)
      return;
    const auto value = static_cast<long long>(token.fence().value_or(0));
    const std::int64_t sent = monotonic_ns();
    try {
      const auto accepted = redis.process(leasehold::Command{
          "EVAL", kFenceScript, "1", prefix + ":fence:" + name, std::to_string(value)});
      recorder.record({.kind = EventKind::fence,
                       .name = name,
                       .lease = lease,
                       .value = value,
                       .ok = accepted.integer == 1,
                       .start = sent});
    } catch (const leasehold::Error&) {
      recorder.record({.kind = EventKind::fence,
                       .name = name,
                       .lease = lease,
                       .value = value,
                       .start = sent,
                       .detail = "unknown"});
    }
  }

  int run() {
    const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
    const auto thread_main = [&](unsigned seed, bool reader) {
      std::mt19937 random(seed);
      std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
      while (monotonic_ns() < end) {
        const std::string& name = names[pick(random)];
        const bool ran = reader ? attempt(lock.try_read(name), name, 'r')
                                : attempt(lock.try_write(name), name, 'w');
        if (!ran)
          std::this_thread::sleep_for(retry);  // between attempts
        else if (!reader)
          std::this_thread::sleep_for(write_pause);  // a writer's think time between sections
      }
    };
    const int readers = static_cast<int>(options.number("readers", 1));
    run_threads(static_cast<int>(options.number("threads", 2)),
                [&](unsigned seed, int t) { thread_main(seed, t < readers); });
    return 0;
  }
};

}  // namespace

int run_rwlock(const Options& options) {
  return RwLockWorker(options).run();
}

}  // namespace leasehold::testing::torture_worker
