// The lease mode: try_lock, while_held and release on a Lock or an RwLock's writer side, with
// fenced writes on request (main.cpp).
#include <unistd.h>

#include <atomic>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>

#include "worker.hpp"

namespace leasehold::testing::torture_worker {

namespace {

// L: Lock<std::string>, or RwLock<std::string> whose writer side it takes.
template <class L>
struct LeaseWorker {
  using Token = leasehold::LockToken<L>;

  const Options& options;
  Recorder recorder{options.text("out")};
  const std::shared_ptr<ExtensionObserver> extensions =
      std::make_shared<ExtensionObserver>(recorder);
  leasehold::Client redis;
  const std::string prefix = options.text("prefix", "torture");
  const L lock;
  const bool lock_fence = options.flag("lock-fence");
  const std::vector<std::string> names = options.names();
  const std::chrono::milliseconds retry = ms(options.number("retry-ms", 10));
  std::mt19937 random{static_cast<unsigned>(::getpid())};

  explicit LeaseWorker(const Options& o)
      : options(o),
        redis(o.text("url"), client_options(o, extensions)),
        lock(make_lock(o, prefix)) {}

  static L make_lock(const Options& o, const std::string& prefix) {
    const L plain("torture", ms(o.number("ttl-ms", 1000)), prefix);
    return o.flag("lock-fence") ? plain.with_fencing() : plain;
  }

  auto try_acquire(const std::string& name) const {
    if constexpr (std::is_same_v<L, leasehold::RwLock<std::string>>)
      return lock.try_write(name);
    else
      return lock.try_lock(name);
  }

  static leasehold::ClientOptions client_options(const Options& o,
                                                 std::shared_ptr<ExtensionObserver> extensions) {
    leasehold::ClientOptions client;
    client.client_name = o.text("client-name", "torture-worker");
    client.observer = std::move(extensions);
    return client;
  }

  // One attempt; the token if granted. Records the call and its outcome.
  std::optional<Token> attempt(const std::string& name, std::uint64_t lease) {
    const std::int64_t called = monotonic_ns();
    recorder.record({.t = called, .kind = EventKind::acquire_call, .name = name, .lease = lease});
    try {
      auto token = redis.process(try_acquire(name));
      if (!token) {
        recorder.record({.kind = EventKind::acquire_fail, .name = name, .lease = lease});
        return std::nullopt;
      }
      // With --lock-fence the grant's fencing number, which the checker wants increasing.
      recorder.record({.kind = EventKind::acquire_ok,
                       .name = name,
                       .lease = lease,
                       .deadline = to_monotonic_ns(token->deadline()),
                       .value = static_cast<std::int64_t>(token->fence().value_or(0)),
                       .start = token->fence() ? called : 0});
      return token;
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::acquire_unknown,
                       .name = name,
                       .lease = lease,
                       .detail = as_word(e.what())});
      return std::nullopt;
    }
  }

  void release(const Token& token, const std::string& name, std::uint64_t lease) {
    release_and_record(redis, recorder, token, name, lease, 'w');
  }

  // The resource's write: the fence script, which accepts a version higher than the last; or
  // with --guarded, a SET done only while the lease is held (guarded.hpp).
  bool write(const Token& token, const std::string& fence_key, long long version) {
    if (options.flag("guarded")) {
      auto guarded = leasehold::guarded(token);
      guarded.call({"SET", fence_key, std::to_string(version)});
      return redis.process(guarded).has_value();
    }
    return redis
               .process(leasehold::Command{"EVAL", kFenceScript, "1", fence_key,
                                           std::to_string(version)})
               .integer == 1;
  }

  // The section under a held lease: extensions are recorded as the token's deadline moves.
  void section(const Token& token, const std::string& name, std::uint64_t lease,
               std::chrono::milliseconds length) {
    std::atomic<std::int64_t> lost_at{0};
    ExtensionWatch observe(recorder, token, name, lease, 'w', extensions.get());
    const bool write_after_loss = options.flag("write-after-loss");
    const auto held = leasehold::while_held(redis, token, [&](std::stop_token stop) {
      std::stop_callback on_loss(stop, [&] { lost_at = monotonic_ns(); });
      recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease});
      long long version = 0;
      const std::string fence_key = prefix + ":fence:" + name;
      try {
        if (options.flag("fence") && lock_fence) {
          version = static_cast<long long>(token.fence().value_or(0));
        } else if (options.flag("fence")) {
          const auto current = redis.process(leasehold::Command{"GET", fence_key});
          version = (current.is_nil() ? 0 : std::stoll(current.str)) + 1;
        }
        hold_until(monotonic_ns() + std::chrono::nanoseconds(length).count(), [&] {
          observe();
          return write_after_loss || !stop.stop_requested();
        });
        if (options.flag("fence") && (write_after_loss || !stop.stop_requested())) {
          const std::int64_t sent = monotonic_ns();
          const bool stale = stop.stop_requested();
          try {
            const bool accepted = write(token, fence_key, version);
            recorder.record({.kind = EventKind::fence,
                             .name = name,
                             .lease = lease,
                             .value = version,
                             .ok = accepted,
                             .start = sent,
                             .detail = stale ? "after_loss" : ""});
          } catch (const leasehold::Error& e) {
            recorder.record({.kind = EventKind::fence,
                             .name = name,
                             .lease = lease,
                             .value = version,
                             .start = sent,
                             .detail = "unknown"});
          }
        }
        observe();
        // Stamped, then checked against the token's own deadline as well as the stop token, which
        // a timer requests and a starved process may run late (docs/election.md): a section told
        // valid ended before its deadline.
        const std::int64_t ended = monotonic_ns();
        recorder.record({.t = ended,
                         .kind = EventKind::cs_end,
                         .name = name,
                         .lease = lease,
                         .valid = !stop.stop_requested() && !token.expired()});
      } catch (const leasehold::Error& e) {
        recorder.record(
            {.kind = EventKind::cs_end, .name = name, .lease = lease, .detail = as_word(e.what())});
      }
    });
    if (held.was_lost())
      record_loss(recorder, lost_at, name, lease, 'w', held.loss_cause());
  }

  int run() {
    const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
    const std::string stop_file = options.text("stop-file");
    const auto running = [&] {
      return monotonic_ns() < end && (stop_file.empty() || ::access(stop_file.c_str(), F_OK) != 0);
    };
    const long long iterations = options.number("iterations", -1);
    const auto cs_range = options.text("cs-ms", "10");
    const auto colon = cs_range.find(':');
    std::uniform_int_distribution<long long> cs_length(
        std::stoll(cs_range.substr(0, colon)),
        std::stoll(colon == std::string::npos ? cs_range : cs_range.substr(colon + 1)));
    std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
    const bool probe = options.flag("probe");
    for (long long done = 0; running() && done != iterations;) {
      if (probe) {
        for (const auto& name : names) {
          const auto lease = recorder.next_lease();
          if (auto token = attempt(name, lease))
            release(*token, name, lease);
        }
        std::this_thread::sleep_for(retry);  // the probe's pace
        continue;
      }
      const std::string& name = names[pick(random)];
      std::optional<Token> token;
      std::uint64_t lease = 0;
      while (running()) {
        lease = recorder.next_lease();
        token = attempt(name, lease);
        if (token)
          break;
        std::this_thread::sleep_for(retry);  // between attempts, like with_lock's retry_delay
      }
      if (!token)
        break;
      section(*token, name, lease, ms(cs_length(random)));
      release(*token, name, lease);
      ++done;
    }
    return 0;
  }
};

}  // namespace

int run_lease(const Options& options) {
  if (options.text("lock", "lock") == "rwlock-writer")
    return LeaseWorker<leasehold::RwLock<std::string>>(options).run();
  return LeaseWorker<leasehold::Lock<std::string>>(options).run();
}

}  // namespace leasehold::testing::torture_worker
