// Taking the lease of a command (run, acquire, hold): at once, then in turn with the other
// waiters (a raw key's: polling) until it is taken, --wait runs out or a signal comes.
#include <algorithm>
#include <optional>
#include <stop_token>

#include "cli.hpp"
#include "leases.hpp"
#include "signal_thread.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

// Exits for a failed take. A try whose outcome stayed unknown (a timeout), or a wait that ended
// mid-way, has the client release what it may hold and leave the queue: leasehold exits only once
// those requests were answered or timed out, so that no lease it may have taken is orphaned.
[[noreturn]] void fail(const Globals& globals, const TakeOptions& options, Client& redis,
                       const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  if (error == nullptr || error->code() != errc::wrong_type)  // the message asks Redis then
    redis.close(redis.options().command_timeout);
  if (options.raw_key)
    exit_raw_key_failure(redis, *options.raw_key, e);
  exit_failure(globals, redis, options.name, e);
}

// The locks a request names: NAME's run lock and its permits, the run locks of several NAMEs
// (their writers' leases, as one), or the raw key's lock.
struct Locks {
  Locks(const Globals& globals, const TakeOptions& options)
      : run(run_lock(globals, options.ttl)), raw(options.ttl) {
    if (options.limit)
      permits.emplace(run_semaphore(globals, options.ttl, *options.limit));
    if (!options.more_names.empty()) {
      std::vector<std::string> names{options.name};
      names.insert(names.end(), options.more_names.begin(), options.more_names.end());
      set.emplace(run, std::span<const std::string>(names));
    }
  }
  RwLock<std::string> run;
  std::optional<Semaphore<std::string>> permits;
  std::optional<LockSet<RwLock<std::string>>> set;
  RawLock raw;
};

// A set's lease, with each name's fence in the order the names were given.
HeldLease held_set(LockToken<LockSet<RwLock<std::string>>> token, const TakeOptions& options,
                   const LockSet<RwLock<std::string>>& set) {
  std::vector<std::pair<std::string, std::uint64_t>> fences;
  if (!token.fences().empty()) {
    std::vector<std::string> given{options.name};
    given.insert(given.end(), options.more_names.begin(), options.more_names.end());
    for (const std::string& name : given) {
      const auto at = std::find(set.names().begin(), set.names().end(), name);
      fences.emplace_back(name, token.fences()[static_cast<std::size_t>(at - set.names().begin())]);
    }
  }
  HeldLease lease(std::move(token));
  lease.fences = std::move(fences);
  return lease;
}

// What holds the lease a request names, for the messages of a refused or waiting take:
// "held exclusively by 3fa2b1c0… (web-3, pid 4121, "deploy.sh prod", for 12 s; 18 s left)",
// "shared by 2 reader(s) (longest 4.1 s left)", "held by 3 of 3 permit holders (the first ends in
// 2.1 s)", or a raw key's "held by 0a1b2c3d… (4.2 s left)". "held" when it cannot be read.
std::string describe_holders(Client& redis, const TakeOptions& options, const Locks& locks) {
  try {
    if (options.raw_key) {
      const LeaseStatus status = redis.process(lease_status(locks.raw, *options.raw_key));
      if (!status.leases.empty())
        return "held by " + lease_text(status.leases.front());
    } else if (locks.set) {
      for (const std::string& name : locks.set->names()) {
        const LeaseStatus status = redis.process(lease_status(locks.run, name));
        if (!status.leases.empty())
          return "held: '" + name + "' by " + lease_text(status.leases.front());
      }
    } else if (locks.permits) {
      const LeaseStatus status = redis.process(lease_status(*locks.permits, options.name));
      const auto first = std::min_element(
          status.leases.begin(), status.leases.end(),
          [](const LeaseInfo& a, const LeaseInfo& b) { return a.time_left < b.time_left; });
      if (first != status.leases.end())
        return "held by " + std::to_string(status.leases.size()) + " of " +
               std::to_string(locks.permits->permits()) + " permit holders (the first ends in " +
               format_duration(std::max(milliseconds::zero(), first->time_left)) + ")";
      return "held by all " + std::to_string(locks.permits->permits()) + " permit holders";
    } else {
      const LeaseStatus status = redis.process(lease_status(locks.run, options.name));
      milliseconds longest{0};
      for (const LeaseInfo& lease : status.leases) {
        if (lease.kind == LeaseInfo::Kind::exclusive)
          return "held exclusively by " + lease_text(lease);
        longest = std::max(longest, lease.time_left);
      }
      if (!status.leases.empty())
        return "shared by " + std::to_string(status.leases.size()) + " reader(s) (longest " +
               format_duration(longest) + " left)";
    }
  } catch (const Error&) {
  }
  return "held";
}

// One plain try (never queues), as with -n.
std::optional<HeldLease> try_once(const Globals& globals, const TakeOptions& options, Client& redis,
                                  const Locks& locks) {
  const auto attempt = [&](const auto& query) -> std::optional<HeldLease> {
    try {
      if (auto token = redis.process(query))
        return HeldLease(std::move(*token));
      return std::nullopt;
    } catch (const Error& e) {
      fail(globals, options, redis, e);
    }
  };
  if (options.raw_key)
    return attempt(locks.raw.try_lock(*options.raw_key));
  if (locks.set) {
    try {
      if (auto token = redis.process(locks.set->try_lock()))
        return held_set(std::move(*token), options, *locks.set);
      return std::nullopt;
    } catch (const Error& e) {
      fail(globals, options, redis, e);
    }
  }
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
  std::optional<SignalThread> signals(std::in_place, [&](int signal) {
    if (signalled == 0)
      signalled = signal;
    stop.request_stop();
  });
  const auto end_signals = [&] { signals.reset(); };
  const auto held = [](auto token) -> std::optional<HeldLease> {
    if (token)
      return HeldLease(std::move(*token));
    return std::nullopt;
  };
  try {
    std::optional<HeldLease> lease;
    if (options.raw_key) {
      lease = held(lock_until(redis, locks.raw, *options.raw_key, deadline, {}, stop.get_token()));
    } else if (locks.set) {
      if (auto token = lock_set_until(redis, *locks.set, deadline, {}, stop.get_token()))
        lease = held_set(std::move(*token), options, *locks.set);
    } else if (locks.permits)
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
  if (options.raw_key)
    return *options.raw_key;
  std::string names = options.name;
  for (const std::string& name : options.more_names)
    names += " " + name;
  return names;
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
  if (!options.more_names.empty() && (options.shared || options.limit))
    throw UsageError{prefix + (options.shared ? "--shared" : "--limit") +
                     ": several NAMEs are taken as one exclusive lease; give one NAME"};
  for (const std::string& name : options.more_names) {
    if (name.empty())
      throw UsageError{prefix + "NAME must not be empty"};
  }
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
  if (auto lease = try_once(globals, options, redis, locks))
    return Taken{std::move(lease)};
  const auto holder = [&] { return describe_holders(redis, options, locks); };
  const std::string name = lease_name(options);
  const auto give_up = [&] {
    chat(globals, "'" + name + "' is " + holder() + "; giving up");
    return Taken{.lease = std::nullopt, .exit_code = options.conflict_exit_code};
  };
  if (options.nonblock || (options.wait && *options.wait <= milliseconds(0)))
    return give_up();
  chat(globals, "waiting for '" + name + "': " + holder());
  int signalled = 0;
  if (auto lease = wait_in_turn(globals, options, redis, locks, signalled))
    return Taken{std::move(lease)};
  if (signalled != 0)
    return Taken{.lease = std::nullopt, .exit_code = 128 + signalled};
  return give_up();
}

}  // namespace leasehold::cli
