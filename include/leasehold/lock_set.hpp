// Several names of one Lock (or of an RwLock's writers) taken as one lease: an order's SKUs, a
// set of entity ids.
//
//   const leasehold::LockSet skus(stock, {"sku-7", "sku-3", "sku-7"});   // a Lock<std::string>
//   if (auto token = redis.process(skus.try_lock())) {        // all of them, or none
//     ... token->fences()[i] is the fence of skus.names()[i] (a fenced lock)
//     redis.process(token->release());                         // every name
//   }
//   auto token = leasehold::lock_set_until(redis, skus, deadline);   // waits in turn
//   auto token = co_await leasehold::async_lock_set_until(redis, skus, deadline,
//                                                         asio::use_awaitable);
//
// One token, one lease value in every key: extend() and release() cover every name (one script),
// while_held and KeepAlive keep them all, and the lease is lost when any name is lost (the
// extend that finds one gone gives back the others). The names are taken without duplicates and
// in one order (by hash slot, then key). On a single server, and for names whose keys share a
// slot, a try, an extend and a release are each one script, all or none. On a Redis Cluster,
// names of several slots take one script per slot's names, sent together: a try that finds a
// name busy gives back what the other slots' scripts took, so it still takes all or nothing,
// though not atomically. See docs/locks.md, "Several names at once".
#pragma once

#include <algorithm>
#include <asio/async_result.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "leasehold/client.hpp"
#include "leasehold/detail/fence_counters.hpp"
#include "leasehold/detail/keys.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/detail/lock.hpp"
#include "leasehold/detail/report.hpp"
#include "leasehold/detail/wait.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/query.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/slot.hpp"
#include "leasehold/turn.hpp"

namespace leasehold {

namespace detail {

// What a try of a lock set found: the lease on every name, or the place in the set of the first
// name another lease holds.
struct LockSetTried {
  std::shared_ptr<LeaseState> lease;
  std::size_t busy = 0;
};

// The keys of a lock set, in the set's order: a Lock's keys, or an RwLock's writer keys with
// each name's readers' set, queue and tickets.
struct LockSetKeys {
  std::vector<std::string> leases;
  std::vector<std::string> readers;  // an RwLock's; empty for a Lock
  std::vector<std::string> queues;
  std::vector<std::string> tickets;
};

// The try of a lock set (lock_set_try.lua, rw_set_try.lua): one script over every key.
// Retry-safe (a rerun finds its own keys); an unknown outcome gives back every key the try may
// have taken.
class LockSetTry {
 public:
  using result_type = LockSetTried;

  // `holder_label`: the label of the lease's holder (holder.hpp); empty: the process's.
  LockSetTry(LockSetKeys keys, std::optional<std::vector<FenceCounters>> fences,
             std::chrono::milliseconds ttl, std::string_view holder_label = {});

  const std::vector<std::string>& keys() const noexcept { return keys_.leases; }
  const LeaseId& id() const noexcept { return id_; }
  const std::string& holder() const noexcept { return holder_; }
  const std::string& value() const noexcept { return value_; }

  // Names of several slots are one script on a single server, one per slot's names on a
  // cluster (Request::split_by_slot); a name busy in one part makes the try busy.
  Request request() const;
  Result<result_type> parse(const Reply& reply, const Timing& timing) const;
  // Parts of which some took their names and some did not: what they took, given back.
  std::optional<Request> leftover(const Reply& reply) const;
  std::optional<Request> on_unknown_outcome() const;

 private:
  bool writers() const noexcept { return !keys_.readers.empty(); }
  // The ends of the runs of names whose keys share a slot, in the set's order.
  std::vector<std::size_t> runs_of_slot() const;

  LockSetKeys keys_;
  std::optional<std::vector<FenceCounters>> fences_;
  std::chrono::milliseconds ttl_;
  LeaseId id_;
  std::string holder_;
  std::string value_;
};

// `names` with their keys (key_of(name)), without duplicate keys, ordered by hash slot, then key.
template <class N, class KeyOf>
std::pair<std::vector<N>, std::vector<std::string>> ordered_names(std::span<const N> names,
                                                                  KeyOf key_of) {
  std::vector<std::pair<std::string, const N*>> keyed;
  keyed.reserve(names.size());
  for (const N& name : names)
    keyed.emplace_back(key_of(name), &name);
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    const auto a_slot = key_slot(a.first), b_slot = key_slot(b.first);
    return a_slot != b_slot ? a_slot < b_slot : a.first < b.first;
  });
  keyed.erase(std::unique(keyed.begin(), keyed.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              keyed.end());
  std::pair<std::vector<N>, std::vector<std::string>> out;
  for (auto& [key, name] : keyed) {
    out.first.push_back(*name);
    out.second.push_back(std::move(key));
  }
  return out;
}

void validate_lock_set_size(std::size_t names);

// A wait for a lock set (lock_set_until, Locker::with_locks), as a TurnWaitHandle: try the set; if
// a name is busy, hold nothing and wait in turn for that name alone (turn_for(i): the wait of the
// i-th name, made a step of the set's lease here), then try the set again at once; if another
// name is busy then, give the first back and wait for that one. `done` gets the set's lease;
// none when `deadline` passed; an error (with its detail) that ended it, operation_aborted when
// cancelled, and then nothing is left taken.
std::shared_ptr<TurnWaitHandle> make_lock_set_wait(Client& client, LockSetTry attempt,
                                                   std::function<TurnWait(std::size_t)> turn_for,
                                                   Clock::time_point deadline, TurnWaitDone done);

}  // namespace detail

template <class L>
class TryLockSet;

// L: Lock<N>, or RwLock<N> for the writer's lease of each name.
template <class L>
class LockSet {
 public:
  using lock_type = L;
  using name_type = typename L::name_type;
  static constexpr bool kWriters = std::is_same_v<L, RwLock<name_type>>;

  // At least one name, at most 1 000 (after duplicates are removed); throws
  // Error(errc::invalid_argument) otherwise.
  LockSet(const L& lock, std::span<const name_type> names) : lock_(lock) {
    auto [ordered, keys] = detail::ordered_names<name_type>(
        names, [&lock](const name_type& name) { return lease_key(lock, name); });
    detail::validate_lock_set_size(ordered.size());
    names_ = std::move(ordered);
    keys_ = std::move(keys);
  }
  LockSet(const L& lock, std::initializer_list<name_type> names)
      : LockSet(lock, std::span<const name_type>(names.begin(), names.size())) {}

  const L& lock() const noexcept { return lock_; }
  // The names without duplicates, in the order they are taken (by hash slot, then key): the
  // order of a token's fences().
  const std::vector<name_type>& names() const noexcept { return names_; }
  // Each name's lease key: a Lock's key, an RwLock's writer key.
  const std::vector<std::string>& keys() const noexcept { return keys_; }

  // A query yielding std::optional<LockToken<LockSet>>: a token if this call took every name,
  // nothing if another lease holds any of them (and then nothing was taken). Never waits.
  TryLockSet<LockSet> try_lock() const { return TryLockSet<LockSet>(attempt()); }

  // The try itself, for a wait (lock_set_until).
  detail::LockSetTry attempt() const {
    detail::LockSetKeys keys{keys_, {}, {}, {}};
    std::optional<std::vector<detail::FenceCounters>> fences;
    if (lock_.fencing())
      fences.emplace();
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if constexpr (kWriters) {
        keys.readers.push_back(lock_.readers_key(names_[i]));
        keys.queues.push_back(detail::queue_key(keys_[i]));
        keys.tickets.push_back(detail::tickets_key(keys_[i]));
      }
      if (fences)
        fences->push_back(
            detail::fence_counters(lock_.prefix(), keys_[i], lock_.own_fence_key(names_[i])));
    }
    return detail::LockSetTry(std::move(keys), std::move(fences), lock_.ttl());
  }

  // The wait in turn for one name's lease alone, for lock_set_until.
  InTurn<LockToken<L>> in_turn(const name_type& name) const {
    if constexpr (kWriters)
      return lock_.write_in_turn(name);
    else
      return lock_.in_turn(name);
  }
  // The waits in turn for each name alone (by its place in names()), for make_lock_set_wait.
  std::function<detail::TurnWait(std::size_t)> turns(Clock::time_point deadline,
                                                     WaitOptions options) const {
    return [set = *this, deadline, options](std::size_t busy) {
      return detail::TurnWait{detail::TurnAccess::contract(set.in_turn(set.names()[busy])),
                              deadline, options};
    };
  }

 private:
  static std::string lease_key(const L& lock, const name_type& name) {
    if constexpr (kWriters)
      return lock.writer_key(name);
    else
      return lock.key(name);
  }

  L lock_;
  std::vector<name_type> names_;
  std::vector<std::string> keys_;
};

template <class L>
LockSet(const L&, std::initializer_list<typename L::name_type>) -> LockSet<L>;
template <class L>
LockSet(const L&, std::span<const typename L::name_type>) -> LockSet<L>;

template <class L>
class TryLockSet {
 public:
  using result_type = std::optional<LockToken<L>>;
  using effect = Write<L>;

  explicit TryLockSet(detail::LockSetTry attempt) : attempt_(std::move(attempt)) {}

  Request request() const { return attempt_.request(); }
  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    Result<detail::LockSetTried> tried = attempt_.parse(reply, timing);
    if (!tried)
      return Result<result_type>(tried.error(), tried.detail());
    if (!tried->lease)
      return result_type{};
    return result_type{detail::TokenAccess::make<LockToken<L>>(std::move(tried->lease))};
  }
  std::optional<Request> leftover(const Reply& reply) const { return attempt_.leftover(reply); }
  std::optional<Request> on_unknown_outcome() const { return attempt_.on_unknown_outcome(); }
  void report(Observer& observer, const Result<result_type>& outcome,
              const Timing& timing) const noexcept {
    detail::report_try(observer, attempt_.keys().front(), outcome, timing);
  }

 private:
  detail::LockSetTry attempt_;
};

// Waits in turn until this process holds every name of `set` as one lease, or until `deadline`
// (or `stop`): the token, or nothing. It never waits holding a name: when a name is busy it
// gives back what it took and waits in turn for that name alone (its queue, told of releases
// as lock_until is), then tries the whole set again with it. So two sets that share names
// never deadlock, whatever order their names were given in. Throws Error as lock_until does.
// Not on the client's I/O thread.
template <class L>
std::optional<LockToken<LockSet<L>>> lock_set_until(Client& client, const LockSet<L>& set,
                                                    Clock::time_point deadline,
                                                    WaitOptions options = {},
                                                    std::stop_token stop = {}) {
  detail::check_not_io_thread(client, "lock_set_until");
  detail::validate(options);
  return detail::wait_with<LockToken<LockSet<L>>>(
      [&](detail::TurnWaitDone done) {
        return detail::make_lock_set_wait(client, set.attempt(), set.turns(deadline, options),
                                          deadline, std::move(done));
      },
      std::move(stop));
}

template <class L, class Rep, class Period>
std::optional<LockToken<LockSet<L>>> lock_set_for(Client& client, const LockSet<L>& set,
                                                  std::chrono::duration<Rep, Period> timeout,
                                                  WaitOptions options = {},
                                                  std::stop_token stop = {}) {
  return lock_set_until(client, set,
                        Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout),
                        options, std::move(stop));
}

// The async form of lock_set_until; completion signature
// void(std::error_code, std::optional<LockToken<LockSet<L>>>). Cancelling it (its handler's
// cancellation slot, any type) ends it with operation_aborted, leaving no key and no place.
template <class L, class CompletionToken>
auto async_lock_set_until(Client& client, const LockSet<L>& set, Clock::time_point deadline,
                          WaitOptions options, CompletionToken&& token) {
  detail::validate(options);
  return detail::async_wait_with<LockToken<LockSet<L>>>(
      client,
      [&client, attempt = set.attempt(), turns = set.turns(deadline, options),
       deadline](detail::TurnWaitDone done) mutable {
        return detail::make_lock_set_wait(client, std::move(attempt), std::move(turns), deadline,
                                          std::move(done));
      },
      std::stop_token{}, std::forward<CompletionToken>(token));
}

template <class L, class CompletionToken>
auto async_lock_set_until(Client& client, const LockSet<L>& set, Clock::time_point deadline,
                          CompletionToken&& token) {
  return async_lock_set_until(client, set, deadline, WaitOptions{},
                              std::forward<CompletionToken>(token));
}

}  // namespace leasehold
