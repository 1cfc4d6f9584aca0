// A node of a torture deployment: a separate process that takes leases in a loop and records
// what it did (history.hpp) for the checker. The torture tests start several, then kill, stop or
// starve them, or restart the server under them.
//
// leasehold-torture-worker MODE --url URL --out FILE [--option value]...
//
// with-lock: --threads N threads run with_lock (waiting forever) on random names of --names
//   (a,b,c) with --ttl-ms; each section reads the counter "<prefix>:counter:<name>", holds
//   --hold-us, writes it + 1 (unless the lease was lost meanwhile). Runs --duration-ms.
// lease: Lock<std::string>{"torture", ttl, prefix} with try_lock (retried every --retry-ms) and
//   while_held; each section lasts --cs-ms MIN[:MAX] and, with --fence, ends with a fenced write
//   (see below); with --write-after-loss the section runs to its end and makes its write even
//   after the lease was lost (a holder that does not look at its stop token). Extensions are seen
//   as the token's deadline moving. With --probe the worker instead tries every name once per
//   --retry-ms and releases at once. Runs --duration-ms or --iterations sections.
// cron: a cron::Scheduler job (AtLeast --interval-ms) that claims cron::IntervalLease
//   (--lease-ms) on --names' first name at each tick and then runs for --run-ms.
//
// The fenced resource is a Redis key "<prefix>:fence:<name>" holding the highest version accepted
// so far. A holder reads it under its lease and writes version read + 1; the resource accepts a
// write only if its version is higher than the one it holds (a Lua script), so a stale holder
// whose lease ran out while someone else wrote is refused — the fencing of docs/locks.md with a
// value the resource keeps.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <map>
#include <random>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "history.hpp"

namespace {

using namespace std::chrono_literals;
using leasehold::testing::EventKind;
using leasehold::testing::monotonic_ns;
using leasehold::testing::Recorder;
using leasehold::testing::to_monotonic_ns;

constexpr std::string_view kFenceScript = R"(
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0)";

struct Options {
  std::map<std::string, std::string> values;

  std::string text(const std::string& key, std::string fallback = {}) const {
    const auto at = values.find(key);
    return at == values.end() ? fallback : at->second;
  }
  long long number(const std::string& key, long long fallback) const {
    const auto at = values.find(key);
    return at == values.end() ? fallback : std::stoll(at->second);
  }
  bool flag(const std::string& key) const { return values.count(key) != 0; }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    std::stringstream list(text("names", "a"));
    for (std::string name; std::getline(list, name, ',');)
      names.push_back(name);
    return names;
  }
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 2; i < argc; ++i) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0)
      throw std::invalid_argument("unexpected argument " + key);
    key = key.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
      options.values[key] = argv[++i];
    else
      options.values[key] = "1";
  }
  return options;
}

// An error as one word for the history's detail field.
std::string as_word(const std::string& text) {
  std::string word = text.substr(0, 60);
  for (char& c : word)
    if (c == ' ' || c == '\n' || c == '\t' || c == '=')
      c = '_';
  return word.empty() ? "error" : word;
}

std::string cause_word(std::error_code cause) {
  return cause ? as_word(cause.message()) : "expired_or_taken_over";
}

std::chrono::milliseconds ms(long long count) {
  return std::chrono::milliseconds(count);
}

// Sleeps until `until` in short steps, calling step() after each; stops early when step() says so.
template <class Step>
void hold_until(std::int64_t until_ns, Step step) {
  for (;;) {
    const std::int64_t now = monotonic_ns();
    if (now >= until_ns || !step())
      return;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        2ms, std::chrono::nanoseconds(until_ns - now)));  // the section's work
  }
}

// --- with-lock -----------------------------------------------------------------------------------

int run_with_lock(const Options& options) {
  const Recorder recorder(options.text("out"));
  leasehold::Client redis(options.text("url"));
  const std::string prefix = options.text("prefix", "torture");
  leasehold::Locker locker(redis, prefix);
  const auto names = options.names();
  const auto hold = std::chrono::microseconds(options.number("hold-us", 500));
  const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
  leasehold::WithLockOptions lock_options;
  lock_options.ttl = ms(options.number("ttl-ms", 2000));
  lock_options.retry_attempts = leasehold::WithLockOptions::forever;
  lock_options.retry_delay = ms(options.number("retry-ms", 2));
  lock_options.retry_jitter = 0.5;

  auto thread_main = [&](unsigned seed) {
    std::mt19937 random(seed);
    std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
    while (monotonic_ns() < end) {
      const std::string& name = names[pick(random)];
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
                const auto value = redis.process(leasehold::Command{"GET", counter});
                const long long current = value.is_nil() ? 0 : std::stoll(value.str);
                hold_until(monotonic_ns() + std::chrono::nanoseconds(hold).count(),
                           [&] { return !stop.stop_requested(); });
                if (!stop.stop_requested()) {
                  const std::int64_t sent = monotonic_ns();
                  bool confirmed = false;
                  try {
                    redis.process(leasehold::Command{"SET", counter, std::to_string(current + 1)});
                    confirmed = true;
                  } catch (const leasehold::Error&) {
                    // Unknown: the SET may or may not have run; the checker allows for both.
                  }
                  recorder.record({.kind = EventKind::counter,
                                   .name = name,
                                   .value = current + 1,
                                   .read = current,
                                   .ok = confirmed,
                                   .start = sent});
                }
                recorder.record(
                    {.kind = EventKind::cs_end, .name = name, .valid = !stop.stop_requested()});
              } catch (const leasehold::Error& e) {
                recorder.record(
                    {.kind = EventKind::cs_end, .name = name, .detail = as_word(e.what())});
              }
            },
            lock_options);
      } catch (const leasehold::LockLostError& e) {
        recorder.record({.t = lost_at ? lost_at.load() : monotonic_ns(),
                         .kind = EventKind::loss,
                         .name = name,
                         .detail = cause_word(e.cause())});
      } catch (const leasehold::Error& e) {
        recorder.record(
            {.kind = EventKind::acquire_unknown, .name = name, .detail = as_word(e.what())});
      }
    }
  };
  std::vector<std::thread> threads;
  const int count = static_cast<int>(options.number("threads", 1));
  for (int t = 0; t < count; ++t)
    threads.emplace_back(thread_main, static_cast<unsigned>(::getpid() * 100 + t));
  for (auto& thread : threads)
    thread.join();
  return 0;
}

// --- lease ---------------------------------------------------------------------------------------

struct LeaseWorker {
  const Options& options;
  Recorder recorder{options.text("out")};
  leasehold::Client redis;
  const std::string prefix = options.text("prefix", "torture");
  const leasehold::Lock<std::string> lock;
  const std::vector<std::string> names = options.names();
  const std::chrono::milliseconds retry = ms(options.number("retry-ms", 10));
  std::mt19937 random{static_cast<unsigned>(::getpid())};

  explicit LeaseWorker(const Options& o)
      : options(o),
        redis(o.text("url"), client_options(o)),
        lock("torture", ms(o.number("ttl-ms", 1000)), prefix) {}

  static leasehold::ClientOptions client_options(const Options& o) {
    leasehold::ClientOptions client;
    client.client_name = o.text("client-name", "torture-worker");
    return client;
  }

  // One attempt; the token if granted. Records the call and its outcome.
  std::optional<leasehold::LockToken<leasehold::Lock<std::string>>> attempt(const std::string& name,
                                                                            std::uint64_t lease) {
    recorder.record({.kind = EventKind::acquire_call, .name = name, .lease = lease});
    try {
      auto token = redis.process(lock.try_lock(name));
      if (!token) {
        recorder.record({.kind = EventKind::acquire_fail, .name = name, .lease = lease});
        return std::nullopt;
      }
      recorder.record({.kind = EventKind::acquire_ok,
                       .name = name,
                       .lease = lease,
                       .deadline = to_monotonic_ns(token->deadline())});
      return token;
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::acquire_unknown,
                       .name = name,
                       .lease = lease,
                       .detail = as_word(e.what())});
      return std::nullopt;
    }
  }

  void release(const leasehold::LockToken<leasehold::Lock<std::string>>& token,
               const std::string& name, std::uint64_t lease) {
    recorder.record({.kind = EventKind::release_call, .name = name, .lease = lease});
    try {
      const bool released = redis.process(token.release());
      recorder.record({.kind = released ? EventKind::release_ok : EventKind::release_fail,
                       .name = name,
                       .lease = lease});
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::release_unknown,
                       .name = name,
                       .lease = lease,
                       .detail = as_word(e.what())});
    }
  }

  // The section under a held lease: extensions are recorded as the token's deadline moves.
  void section(const leasehold::LockToken<leasehold::Lock<std::string>>& token,
               const std::string& name, std::uint64_t lease, std::chrono::milliseconds length) {
    std::atomic<std::int64_t> lost_at{0};
    std::int64_t seen_deadline = to_monotonic_ns(token.deadline());
    const auto observe = [&] {
      const std::int64_t deadline = to_monotonic_ns(token.deadline());
      if (deadline > seen_deadline) {
        seen_deadline = deadline;
        recorder.record(
            {.kind = EventKind::extend_ok, .name = name, .lease = lease, .deadline = deadline});
      }
    };
    const bool write_after_loss = options.flag("write-after-loss");
    const auto held = leasehold::while_held(redis, token, [&](std::stop_token stop) {
      std::stop_callback on_loss(stop, [&] { lost_at = monotonic_ns(); });
      recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease});
      long long version = 0;
      const std::string fence_key = prefix + ":fence:" + name;
      try {
        if (options.flag("fence")) {
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
            const auto accepted = redis.process(
                leasehold::Command{"EVAL", kFenceScript, "1", fence_key, std::to_string(version)});
            recorder.record({.kind = EventKind::fence,
                             .name = name,
                             .lease = lease,
                             .value = version,
                             .ok = accepted.integer == 1,
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
        recorder.record({.kind = EventKind::cs_end,
                         .name = name,
                         .lease = lease,
                         .valid = !stop.stop_requested()});
      } catch (const leasehold::Error& e) {
        recorder.record(
            {.kind = EventKind::cs_end, .name = name, .lease = lease, .detail = as_word(e.what())});
      }
    });
    if (held.was_lost()) {
      recorder.record({.t = lost_at ? lost_at.load() : monotonic_ns(),
                       .kind = EventKind::loss,
                       .name = name,
                       .lease = lease,
                       .detail = cause_word(held.loss_cause())});
    }
  }

  int run() {
    const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
    const long long iterations = options.number("iterations", -1);
    const auto cs_range = options.text("cs-ms", "10");
    const auto colon = cs_range.find(':');
    std::uniform_int_distribution<long long> cs_length(
        std::stoll(cs_range.substr(0, colon)),
        std::stoll(colon == std::string::npos ? cs_range : cs_range.substr(colon + 1)));
    std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
    const bool probe = options.flag("probe");
    for (long long done = 0; monotonic_ns() < end && done != iterations;) {
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
      std::optional<leasehold::LockToken<leasehold::Lock<std::string>>> token;
      std::uint64_t lease = 0;
      while (monotonic_ns() < end) {
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

// --- cron ----------------------------------------------------------------------------------------

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
    std::optional<leasehold::LockToken<leasehold::Lock<std::string>>> token;
    try {
      token = interval_lease.claim();
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::acquire_unknown,
                       .name = name,
                       .lease = lease,
                       .detail = as_word(e.what())});
      return;
    }
    if (!token) {
      recorder.record({.kind = EventKind::acquire_fail, .name = name, .lease = lease});
      return;
    }
    recorder.record({.kind = EventKind::acquire_ok,
                     .name = name,
                     .lease = lease,
                     .deadline = to_monotonic_ns(token->deadline())});
    recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease});
    std::this_thread::sleep_for(run_length);  // the job's work
    recorder.record(
        {.kind = EventKind::cs_end, .name = name, .lease = lease, .valid = !token->expired()});
  });
  auto running = scheduler.start();
  std::this_thread::sleep_for(ms(options.number("duration-ms", 1000)));  // the replica's life
  running.shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: leasehold-torture-worker with-lock|lease|cron --url URL --out FILE "
                 "[--option value]...\n";
    return 64;
  }
  try {
    const Options options = parse_options(argc, argv);
    const std::string mode = argv[1];
    if (mode == "with-lock")
      return run_with_lock(options);
    if (mode == "lease")
      return LeaseWorker(options).run();
    if (mode == "cron")
      return run_cron(options);
    std::cerr << "leasehold-torture-worker: unknown mode " << mode << "\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "leasehold-torture-worker: " << e.what() << "\n";
    return 1;
  }
}
