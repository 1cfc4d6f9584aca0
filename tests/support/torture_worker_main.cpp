// A node of a torture deployment: a separate process that takes leases in a loop and records
// what it did (history.hpp) for the checker. The torture tests start several, then kill, stop or
// starve them, or restart the server under them.
//
// leasehold-torture-worker MODE --url URL --out FILE [--option value]...
//
// with-lock: --threads N threads run with_lock (waiting forever) on random names of --names
//   (a,b,c) with --ttl-ms; each section reads the counter "<prefix>:counter:<name>", holds
//   --hold-us, writes it + 1 (unless the lease was lost meanwhile). Runs --duration-ms, or until
//   the file --stop-file exists.
// lease: Lock<std::string>{"torture", ttl, prefix} with try_lock (retried every --retry-ms) and
//   while_held; each section lasts --cs-ms MIN[:MAX] and, with --fence, ends with a fenced write
//   (see below); with --write-after-loss the section runs to its end and makes its write even
//   after the lease was lost (a holder that does not look at its stop token). Extensions are seen
//   as the token's deadline moving. With --probe the worker instead tries every name once per
//   --retry-ms and releases at once. Runs --duration-ms or --iterations sections, or until the
//   file --stop-file exists. With
//   --lock rwlock-writer it takes the writer side of an RwLock<std::string> (try_write) instead;
//   with --lock-fence the lock hands out fencing numbers (with_fencing()) and the fenced write
//   carries the token's fence() instead of a version read from the resource.
// rwlock: --threads N threads, the first --readers of them readers and the rest writers, take
//   RwLock<std::string>{"torture", ttl, prefix} (with --writer-preference-ms, writers preferred;
//   with --fence, fenced writers) on random names of --names with try_read / try_write, retried
//   every --retry-ms, and run a section under while_held. A writer's section reads the counter
//   "<prefix>:counter:<name>", holds --hold-us, writes it + 1 (and with --fence makes a fenced
//   write with its token's fence()); a reader's reads the counter, holds --read-hold-us and reads
//   it again: a writer inside the section would have changed it. A writer pauses --write-pause-ms
//   after each of its sections. Runs --duration-ms.
// semaphore: --threads N threads take permits of Semaphore<std::string>{"torture", --permits, ttl,
//   prefix} on random names of --names, each with acquire_for (waiting in turn up to --wait-ms)
//   or, without --wait-ms, try_acquire retried every --retry-ms, and run a section of --cs-ms
//   MIN[:MAX] under while_held; with --occupancy a section counts itself in and out at Redis
//   (INCR/DECR "<prefix>:inside:<name>") and records the count it found. Runs --duration-ms.
// cron: a cron::Scheduler job (AtLeast --interval-ms) that claims cron::IntervalLease
//   (--lease-ms) on --names' first name at each tick and then runs for --run-ms.
//
// The fenced resource is a Redis key "<prefix>:fence:<name>" holding the highest fence accepted
// so far; it accepts a write only if its fence is higher (a Lua script). The fence is either a
// version the holder reads from the resource under its lease and increments, or the fencing
// number its lock granted (token.fence()). Either way a stale holder whose lease ran out while
// someone else wrote is refused — the fencing of docs/locks.md.
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
#include <type_traits>
#include <vector>

#include "history.hpp"

namespace {

using namespace std::chrono_literals;
using leasehold::testing::EventKind;
using leasehold::testing::monotonic_ns;
using leasehold::testing::Recorder;

// A lease deadline (leasehold::Clock, CLOCK_BOOTTIME) on the history's CLOCK_MONOTONIC scale. The
// two clocks differ by the time the host was suspended, which does not change while a scenario
// runs: the offset is read once, the monotonic reading bracketed by two boot readings (again if
// this process was stopped or preempted in between), so that every deadline maps the same way.
std::int64_t to_monotonic_ns(leasehold::Clock::time_point deadline) {
  static const std::chrono::nanoseconds boot_minus_monotonic = [] {
    for (;;) {
      const auto boot_before = leasehold::Clock::now();
      const auto monotonic_now = std::chrono::steady_clock::now();
      const auto boot_after = leasehold::Clock::now();
      if (boot_after - boot_before <= 100us)
        return boot_after.time_since_epoch() - monotonic_now.time_since_epoch();
    }
  }();
  // Mapped a little early (by at most the bracket), never late.
  return leasehold::testing::to_monotonic_ns(std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline.time_since_epoch() -
                                                                      boot_minus_monotonic)));
}

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

// The counter "<prefix>:counter:<name>"; 0 if it does not exist.
long long read_counter(leasehold::Client& redis, const std::string& key) {
  const auto value = redis.process(leasehold::Command{"GET", key});
  return value.is_nil() ? 0 : std::stoll(value.str);
}

// Records an extension (extend_ok) each time a held token's deadline has moved on since it last
// looked. Compared on the lease's own clock: the mapping onto the history's differs by
// nanoseconds from one reading to the next, which must not pass for an extension.
template <class Token>
class ExtensionWatch {
 public:
  ExtensionWatch(const Recorder& recorder, const Token& token, const std::string& name,
                 std::uint64_t lease, char mode)
      : recorder_(recorder),
        token_(token),
        name_(name),
        lease_(lease),
        mode_(mode),
        seen_(token.deadline()) {}

  void operator()() {
    const leasehold::Clock::time_point deadline = token_.deadline();
    if (deadline <= seen_)
      return;
    seen_ = deadline;
    recorder_.record({.kind = EventKind::extend_ok,
                      .name = name_,
                      .lease = lease_,
                      .mode = mode_,
                      .deadline = to_monotonic_ns(deadline)});
  }

 private:
  const Recorder& recorder_;
  const Token& token_;
  const std::string& name_;
  std::uint64_t lease_;
  char mode_;
  leasehold::Clock::time_point seen_;
};

// The non-atomic half of read-sleep-write: writes read + 1 and records it, confirmed or unknown.
void write_counter(leasehold::Client& redis, const Recorder& recorder, const std::string& name,
                   std::uint64_t lease, const std::string& key, long long read) {
  const std::int64_t sent = monotonic_ns();
  bool confirmed = false;
  try {
    redis.process(leasehold::Command{"SET", key, std::to_string(read + 1)});
    confirmed = true;
  } catch (const leasehold::Error&) {
    // Unknown: the SET may or may not have run; the checker allows for both.
  }
  recorder.record({.kind = EventKind::counter,
                   .name = name,
                   .lease = lease,
                   .value = read + 1,
                   .read = read,
                   .ok = confirmed,
                   .start = sent});
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
  const auto first_name = static_cast<std::size_t>(options.number("first-name", 0));
  for (int t = 0; t < count; ++t)
    threads.emplace_back(thread_main, static_cast<unsigned>(::getpid() * 100 + t),
                         first_name + static_cast<std::size_t>(t));
  for (auto& thread : threads)
    thread.join();
  return 0;
}

// --- lease ---------------------------------------------------------------------------------------

// L: Lock<std::string>, or RwLock<std::string> whose writer side it takes.
template <class L>
struct LeaseWorker {
  using Token = leasehold::LockToken<L>;

  const Options& options;
  Recorder recorder{options.text("out")};
  leasehold::Client redis;
  const std::string prefix = options.text("prefix", "torture");
  const L lock;
  const bool lock_fence = options.flag("lock-fence");
  const std::vector<std::string> names = options.names();
  const std::chrono::milliseconds retry = ms(options.number("retry-ms", 10));
  std::mt19937 random{static_cast<unsigned>(::getpid())};

  explicit LeaseWorker(const Options& o)
      : options(o), redis(o.text("url"), client_options(o)), lock(make_lock(o, prefix)) {}

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

  static leasehold::ClientOptions client_options(const Options& o) {
    leasehold::ClientOptions client;
    client.client_name = o.text("client-name", "torture-worker");
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
  void section(const Token& token, const std::string& name, std::uint64_t lease,
               std::chrono::milliseconds length) {
    std::atomic<std::int64_t> lost_at{0};
    ExtensionWatch observe(recorder, token, name, lease, 'w');
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

// --- rwlock --------------------------------------------------------------------------------------

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
    recorder.record({.kind = EventKind::release_call, .name = name, .lease = lease, .mode = mode});
    try {
      const bool released = redis.process(token->release());
      recorder.record({.kind = released ? EventKind::release_ok : EventKind::release_fail,
                       .name = name,
                       .lease = lease,
                       .mode = mode});
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::release_unknown,
                       .name = name,
                       .lease = lease,
                       .mode = mode,
                       .detail = as_word(e.what())});
    }
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
    if (held.was_lost()) {
      recorder.record({.t = lost_at ? lost_at.load() : monotonic_ns(),
                       .kind = EventKind::loss,
                       .name = name,
                       .lease = lease,
                       .mode = mode,
                       .detail = cause_word(held.loss_cause())});
    }
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
    std::vector<std::thread> threads;
    const int count = static_cast<int>(options.number("threads", 2));
    const int readers = static_cast<int>(options.number("readers", 1));
    for (int t = 0; t < count; ++t)
      threads.emplace_back(thread_main, static_cast<unsigned>(::getpid() * 100 + t), t < readers);
    for (auto& thread : threads)
      thread.join();
    return 0;
  }
};

// --- semaphore -----------------------------------------------------------------------------------

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
    if (held.was_lost()) {
      recorder.record({.t = lost_at ? lost_at.load() : monotonic_ns(),
                       .kind = EventKind::loss,
                       .name = name,
                       .lease = lease,
                       .mode = 'p',
                       .detail = cause_word(held.loss_cause())});
    }
  }

  void release(const Token& token, const std::string& name, std::uint64_t lease) {
    recorder.record({.kind = EventKind::release_call, .name = name, .lease = lease, .mode = 'p'});
    try {
      const bool released = redis.process(token.release());
      recorder.record({.kind = released ? EventKind::release_ok : EventKind::release_fail,
                       .name = name,
                       .lease = lease,
                       .mode = 'p'});
    } catch (const leasehold::Error& e) {
      recorder.record({.kind = EventKind::release_unknown,
                       .name = name,
                       .lease = lease,
                       .mode = 'p',
                       .detail = as_word(e.what())});
    }
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
    std::vector<std::thread> threads;
    const int count = static_cast<int>(options.number("threads", 2));
    for (int t = 0; t < count; ++t)
      threads.emplace_back(thread_main, static_cast<unsigned>(::getpid() * 100 + t));
    for (auto& thread : threads)
      thread.join();
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: leasehold-torture-worker with-lock|lease|rwlock|semaphore|cron --url URL "
                 "--out FILE "
                 "[--option value]...\n";
    return 64;
  }
  try {
    const Options options = parse_options(argc, argv);
    const std::string mode = argv[1];
    if (mode == "with-lock")
      return run_with_lock(options);
    if (mode == "lease" && options.text("lock", "lock") == "rwlock-writer")
      return LeaseWorker<leasehold::RwLock<std::string>>(options).run();
    if (mode == "lease")
      return LeaseWorker<leasehold::Lock<std::string>>(options).run();
    if (mode == "rwlock")
      return RwLockWorker(options).run();
    if (mode == "semaphore")
      return SemaphoreWorker(options).run();
    if (mode == "cron")
      return run_cron(options);
    std::cerr << "leasehold-torture-worker: unknown mode " << mode << "\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "leasehold-torture-worker: " << e.what() << "\n";
    return 1;
  }
}
