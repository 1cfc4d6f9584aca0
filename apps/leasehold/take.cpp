// Taking the lease of a command (run, acquire, hold): at once, then in turn with the other
// waiters (a raw key's: polling) until it is taken, --wait runs out or a signal comes.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <stop_token>
#include <thread>

#include "cli.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

// "held by a writer, 3fa2b1c0… (12.3 s left)" or "shared by 2 readers (longest 4.1 s left)".
std::string describe_holder(Client& redis, const RwLock<std::string>& lock,
                            const std::string& name) {
  try {
    const Reply writer = redis.process(Command{"GET", lock.writer_key(name)});
    if (writer.type == Reply::Type::string) {
      const Reply ttl = redis.process(Command{"PTTL", lock.writer_key(name)});
      return "held exclusively by " + writer.str.substr(0, 8) + "\xe2\x80\xa6 (" +
             format_duration(milliseconds(std::max(0LL, ttl.integer))) + " left)";
    }
    const Reply readers = redis.process(Command{"ZCARD", lock.readers_key(name)});
    const Reply ttl = redis.process(Command{"PTTL", lock.readers_key(name)});
    if (readers.integer > 0) {
      return "shared by " + std::to_string(readers.integer) + " reader(s) (longest " +
             format_duration(milliseconds(std::max(0LL, ttl.integer))) + " left)";
    }
  } catch (const Error&) {
  }
  return "held";
}

// "held by 3 of 3 permit holders (the first ends in 2.1 s)".
std::string describe_permits(Client& redis, const Semaphore<std::string>& permits,
                             const std::string& name) {
  try {
    const Reply first =
        redis.process(Command{"ZRANGE", permits.holders_key(name), "0", "0", "WITHSCORES"});
    const Reply time = redis.process(Command{"TIME"});
    const Reply count = redis.process(Command{"ZCARD", permits.holders_key(name)});
    if (first.elements.size() == 2 && time.elements.size() == 2) {
      const long long now_ms =
          std::stoll(time.elements[0].str) * 1000 + std::stoll(time.elements[1].str) / 1000;
      const long long left = std::max(0LL, std::stoll(first.elements[1].str) - now_ms);
      return "held by " + std::to_string(count.integer) + " of " +
             std::to_string(permits.permits()) + " permit holders (the first ends in " +
             format_duration(milliseconds(left)) + ")";
    }
  } catch (const std::exception&) {
  }
  return "held by all " + std::to_string(permits.permits()) + " permit holders";
}

// "held by another client's lock, 0a1b2c3d… (4.2 s left)".
std::string describe_raw_holder(Client& redis, const std::string& key) {
  try {
    const Reply value = redis.process(Command{"GET", key});
    const Reply ttl = redis.process(Command{"PTTL", key});
    if (value.type == Reply::Type::string)
      return "held by " + value.str.substr(0, 8) + "\xe2\x80\xa6 (" +
             format_duration(milliseconds(std::max(0LL, ttl.integer))) + " left)";
  } catch (const Error&) {
  }
  return "held";
}

[[noreturn]] void fail(const Globals& globals, const TakeOptions& options, Client& redis,
                       const std::exception& e) {
  if (options.raw_key)
    exit_raw_key_failure(redis, *options.raw_key, e);
  exit_failure(globals, redis, options.name, e);
}

// The locks a request names: NAME's run lock and its permits, or the raw key's lock.
struct Locks {
  Locks(const Globals& globals, const TakeOptions& options)
      : run(run_lock(globals, options.ttl)), raw(options.ttl) {
    if (options.limit)
      permits.emplace(run_semaphore(globals, options.ttl, *options.limit));
  }
  RwLock<std::string> run;
  std::optional<Semaphore<std::string>> permits;
  RawLock raw;
};

// One plain try (never queues), as with -n. A try whose outcome stays unknown (a timeout)
// releases its id before leasehold exits, so that the lease it may have taken is not orphaned.
std::optional<HeldLease> try_once(const Globals& globals, const TakeOptions& options, Client& redis,
                                  const Locks& locks) {
  const auto attempt = [&](const auto& query) -> std::optional<HeldLease> {
    try {
      if (auto token = redis.process(query))
        return HeldLease(std::move(*token));
      return std::nullopt;
    } catch (const Error& e) {
      if (outcome_unknown(e.code())) {
        std::error_code ignored;
        if (const auto cleanup = query.on_unknown_outcome())
          redis.process(Command(std::move(*cleanup)), ignored);
      }
      fail(globals, options, redis, e);
    }
  };
  if (options.raw_key)
    return attempt(locks.raw.try_lock(*options.raw_key));
  if (locks.permits)
    return attempt(locks.permits->try_acquire(options.name));
  if (options.shared)
    return attempt(locks.run.try_read(options.name));
  return attempt(locks.run.try_write(options.name));
}

// Waits (told of each release; a raw key: polling) until the lease is ours, --wait runs out, or
// a forwarded signal arrives (nothing runs yet, nothing is held): `signalled` is its number.
std::optional<HeldLease> wait_in_turn(const Globals& globals, const TakeOptions& options,
                                      Client& redis, const Locks& locks, int& signalled) {
  const Clock::time_point deadline =
      options.wait ? Clock::now() + *options.wait : Clock::time_point::max();
  std::stop_source stop;
  std::atomic<bool> waiting{true};
  // The forwarded signals are blocked in every thread: this one takes them while the wait runs.
  std::thread signals([&] {
    const sigset_t forwarded = forwarded_signals();
    while (waiting) {
      timespec pace{1, 0};  // a safety net: end_signals() wakes it at once
      const int signal = sigtimedwait(&forwarded, nullptr, &pace);
      if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
        signalled = signal;
        stop.request_stop();
        return;
      }
    }
  });
  const auto end_signals = [&] {
    waiting = false;
    // SIGCHLD is one of the signals it waits for, and no child runs yet: it wakes, and ends.
    pthread_kill(signals.native_handle(), SIGCHLD);
    signals.join();
  };
  const auto held = [](auto token) -> std::optional<HeldLease> {
    if (token)
      return HeldLease(std::move(*token));
    return std::nullopt;
  };
  try {
    std::optional<HeldLease> lease;
    if (options.raw_key)
      lease = held(lock_until(redis, locks.raw, *options.raw_key, deadline, {}, stop.get_token()));
    else if (locks.permits)
      lease =
          held(acquire_until(redis, *locks.permits, options.name, deadline, {}, stop.get_token()));
    else if (options.shared)
      lease = held(read_until(redis, locks.run, options.name, deadline, {}, stop.get_token()));
    else
      lease = held(write_until(redis, locks.run, options.name, deadline, {}, stop.get_token()));
    end_signals();
    return lease;
  } catch (const Error& e) {
    end_signals();
    fail(globals, options, redis, e);
  }
}

}  // namespace

std::string lease_name(const TakeOptions& options) {
  return options.raw_key ? *options.raw_key : options.name;
}

void validate(const TakeOptions& options, std::string_view command) {
  const std::string prefix = std::string(command) + ": ";
  if (options.raw_key && !options.name.empty())
    throw UsageError{prefix + "give NAME or --raw-key KEY, not both"};
  if (!options.raw_key && options.name.empty())
    throw UsageError{prefix + "NAME must not be empty"};
  if (options.raw_key && options.raw_key->empty())
    throw UsageError{prefix + "--raw-key: KEY must not be empty"};
  if (options.raw_key && options.shared)
    throw UsageError{prefix +
                     "--shared: a raw key is another client's lock, which has no shared mode"};
  if (options.raw_key && options.limit)
    throw UsageError{prefix + "--limit: a raw key is another client's lock, which has no permits"};
  if (options.ttl < milliseconds(10))
    throw UsageError{"--ttl: must be at least 10ms"};
}

std::string HeldLease::token() const {
  return std::visit([](const auto& token) { return token.id().hex(); }, lease);
}
std::string HeldLease::key() const {
  return std::visit([](const auto& token) { return token.key(); }, lease);
}
std::optional<std::uint64_t> HeldLease::fence() const {
  return std::visit([](const auto& token) { return token.fence(); }, lease);
}
LeaseGuard HeldLease::guard(Client& redis, milliseconds max_hold) && {
  return std::visit([&](auto& token) { return LeaseGuard(redis, std::move(token), max_hold); },
                    lease);
}
std::string HeldLease::kind(const TakeOptions& options) const {
  if (options.raw_key)
    return "a raw key's lock";
  if (options.limit)
    return "one of " + std::to_string(*options.limit) + " permits";
  return options.shared ? "shared" : "exclusive";
}

Taken take_lease(const Globals& globals, const TakeOptions& options, Client& redis) {
  const Locks locks(globals, options);
  // The first try is not a wait: its outcome is told here when it is the only one.
  const Clock::time_point started = Clock::now();
  const auto tell = [&](AcquireEvent::Outcome outcome, const std::string& key) {
    if (Observer* observer = redis.options().observer.get())
      observer->on_acquire(AcquireEvent{key, outcome, Clock::now() - started});
  };
  if (auto lease = try_once(globals, options, redis, locks)) {
    tell(AcquireEvent::Outcome::acquired, lease->key());
    return Taken{std::move(lease)};
  }
  const auto holder = [&] {
    if (options.raw_key)
      return describe_raw_holder(redis, *options.raw_key);
    return locks.permits ? describe_permits(redis, *locks.permits, options.name)
                         : describe_holder(redis, locks.run, options.name);
  };
  const std::string name = lease_name(options);
  const auto give_up = [&] {
    chat(globals, "'" + name + "' is " + holder() + "; giving up");
    return Taken{.lease = std::nullopt, .exit_code = options.conflict_exit_code};
  };
  if (options.nonblock || (options.wait && *options.wait <= milliseconds(0))) {
    tell(AcquireEvent::Outcome::busy, options.raw_key ? *options.raw_key
                                      : locks.permits ? locks.permits->holders_key(options.name)
                                                      : locks.run.writer_key(options.name));
    return give_up();
  }
  chat(globals, "waiting for '" + name + "': " + holder());
  int signalled = 0;
  if (auto lease = wait_in_turn(globals, options, redis, locks, signalled))
    return Taken{std::move(lease)};
  if (signalled != 0)
    return Taken{.lease = std::nullopt, .exit_code = 128 + signalled};
  return give_up();
}

}  // namespace leasehold::cli
