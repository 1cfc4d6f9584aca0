// RwLock<N>: one writer, or any number of readers, per name. Every reader holds a lease of its
// own; the writer's lease works like a Lock's.
//
//   constexpr leasehold::RwLock<std::string> catalog{"catalog", 10s};
//   if (auto reader = redis.process(catalog.try_read("books"))) { export_books(); ... }
//   if (auto writer = redis.process(catalog.try_write("books"))) { reprice_books(); ... }
//
// Neither call waits. A read fails while a writer holds the name; a write fails while a writer or
// any live reader holds it. read_until() and write_until() (wait.hpp) wait in turn. See
// docs/rwlock.md.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/rwlock.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {

template <class L>
class TryRead;
template <class L>
class TryWrite;
template <class L>
class ActById;
// One of a name's readers; an RwLock's writer is its name's sole holder (HolderSide).
struct ReaderSide {
  static constexpr std::string_view token_name = "ReadToken";
};
// The token of one RwLock reader (a writer's is a LockToken).
template <class L>
using ReadToken = BasicToken<L, ReaderSide>;

template <LockNameType N>
class RwLock {
 public:
  using name_type = N;

  constexpr RwLock(std::string_view ns, std::chrono::milliseconds ttl,
                   std::string_view prefix = kDefaultPrefix)
      : ns_(ns), prefix_(prefix), ttl_(ttl) {
    detail::validate_namespace(ns);
    detail::validate_prefix(prefix);
    detail::validate_ttl(ttl);
  }

  // Opt-in writer preference: a writer that finds readers registers its intent (a lease of
  // `intent_ttl`, refreshed by each failed try_write), and new readers are refused while it
  // lives, so a steady stream of readers cannot starve writers. Retry writes more often than
  // `intent_ttl`.
  constexpr RwLock with_writer_preference(std::chrono::milliseconds intent_ttl) const {
    detail::validate_ttl(intent_ttl);
    RwLock copy = *this;
    copy.intent_ttl_ = intent_ttl;
    return copy;
  }

  // Opt-in fencing numbers for writers: each writer grant also advances the fence counter
  // (fence_counter_key(), server_fence_counter_key(), never expiring) and the writer's
  // token.fence() gives it: strictly increasing per name in grant order.
  constexpr RwLock with_fencing() const {
    RwLock copy = *this;
    copy.fencing_ = true;
    return copy;
  }
  constexpr bool fencing() const noexcept { return fencing_; }

  constexpr std::string_view name_space() const noexcept { return ns_; }
  constexpr std::string_view prefix() const noexcept { return prefix_; }
  constexpr std::chrono::milliseconds ttl() const noexcept { return ttl_; }
  constexpr std::chrono::milliseconds writer_intent_ttl() const noexcept { return intent_ttl_; }

  // "<prefix>:RwLock:{<namespace>:<escaped name>}:w" (and ":r", ":i"): one hash slot per name.
  std::string writer_key(const N& name) const { return key(name, 'w'); }
  std::string readers_key(const N& name) const { return key(name, 'r'); }
  std::string intent_key(const N& name) const { return key(name, 'i'); }
  // A fenced lock's fence counter on a Redis Cluster: "<prefix>:Fences{<tag of the name's
  // slot>}", shared by every fenced name of the prefix in that slot; on a single server
  // "<prefix>:Fences", shared by every fenced name of the prefix (docs/keys.md, "Fence counters").
  std::string fence_counter_key(const N& name) const {
    return detail::fence_counter_key(prefix_, writer_key(name));
  }
  std::string server_fence_counter_key() const { return detail::server_fence_counter_key(prefix_); }
  // The name's own counter of the per-name layout (":f"), which a grant moves into the fence
  // counter.
  std::string own_fence_key(const N& name) const { return key(name, 'f'); }
  // A hash tag, braces included, for keys that must share the lease's hash slot (the keys of
  // guarded writes, guarded.hpp): "invoice:" + hash_tag(name) + ":row".
  std::string hash_tag(const N& name) const { return same_slot_tag(writer_key(name)); }

  // The name whose writer's, readers' or intent key `key` is, or nothing: for status tools that
  // find leases by SCAN (a fencing counter outlives its leases, and is not one).
  std::optional<std::string> name_of_key(
      std::string_view key) const requires std::same_as<N, std::string> {
    return detail::name_in_tagged_key(
        key, std::string(prefix_) + ":RwLock:{" + std::string(ns_) + ":", {":w", ":r", ":i"});
  }

  // A query yielding std::optional<ReadToken<RwLock>>.
  TryRead<RwLock> try_read(const N& name) const {
    return TryRead<RwLock>(writer_key(name), readers_key(name), intent_key(name), ttl_);
  }
  // An operator's query: ends whoever holds the name (the writer, every reader, a writer's
  // intent) and tells the waiters; yields how many of those keys it deleted.
  ForceRelease<RwLock> force_release(const N& name) const {
    return ForceRelease<RwLock>(
        detail::rw_force_release_request(writer_key(name), readers_key(name), intent_key(name)));
  }
  // Who holds `name`, watched (watch.hpp): the writer's lease or the readers' now (empty when
  // free), then each change of them: a lease taken, released or run out, a key deleted. An
  // extension is not a change. See docs/rwlock.md, "Observing".
  Observed<std::vector<LeaseInfo>> observe(const N& name) const {
    return detail::WatchAccess::described(detail::WatchTarget{
        writer_key(name),
        std::nullopt,
        std::nullopt,
        false,
        {writer_key(name), readers_key(name), LeaseInfo::Kind::shared, {}, {}, {}, {}, {}}});
  }

  // A query yielding std::optional<LockToken<RwLock>>.
  TryWrite<RwLock> try_write(const N& name) const {
    return TryWrite<RwLock>(writer_key(name), readers_key(name), intent_key(name), ttl_,
                            intent_ttl_, fence_counters(name));
  }

  // Waits in turn for a reader's or the writer's lease on `name`, for wait_until() (wait.hpp).
  InTurn<ReadToken<RwLock>> read_in_turn(const N& name) const {
    return detail::TurnAccess::make<ReadToken<RwLock>>(detail::rw_turn(keys(name), ttl_, false));
  }
  InTurn<LockToken<RwLock>> write_in_turn(const N& name) const {
    return detail::TurnAccess::make<LockToken<RwLock>>(detail::rw_turn(keys(name), ttl_, true));
  }

  // Tokens for the writer's or a reader's lease on `name` whose value() is `value`, taken by
  // another process or an earlier step (as Lock::adopt()): they extend for this lock's TTL and
  // release that lease. Throw Error(errc::invalid_argument) when `value` is not a lease's value.
  LockToken<RwLock> adopt_write(const N& name, std::string_view value) const {
    return detail::TokenAccess::make<LockToken<RwLock>>(detail::adopted_lease(
        writer_key(name), value, ttl_, &detail::kRwWriterLease, readers_key(name)));
  }
  ReadToken<RwLock> adopt_read(const N& name, std::string_view value) const {
    return detail::TokenAccess::make<ReadToken<RwLock>>(detail::adopted_lease(
        writer_key(name), value, ttl_, &detail::kRwReaderLease, readers_key(name)));
  }

  // Queries for a caller that kept a lease's id and not its value (an operator, a shell script:
  // `leasehold release --token`): the release, or the extend for this lock's TTL, of the writer's
  // or a reader's lease on `name` whose id is `id`, found by the server in the same script call.
  // Each yields true when it released or restarted that lease, false when no lease of that id
  // holds the name; a release is not retry-safe, an extend is (as a token's).
  ActById<RwLock> release_by_id(const N& name, const LeaseId& id) const {
    return ActById<RwLock>(
        detail::rw_by_id_request(writer_key(name), readers_key(name), id, std::nullopt));
  }
  ActById<RwLock> extend_by_id(const N& name, const LeaseId& id) const {
    return ActById<RwLock>(detail::rw_by_id_request(writer_key(name), readers_key(name), id, ttl_));
  }

 private:
  detail::RwKeys keys(const N& name) const {
    return {writer_key(name), readers_key(name), intent_key(name), fence_counters(name)};
  }
  std::optional<detail::FenceCounters> fence_counters(const N& name) const {
    if (!fencing_)
      return std::nullopt;
    return detail::fence_counters(prefix_, writer_key(name), own_fence_key(name));
  }
  std::string key(const N& name, char role) const {
    std::string raw;
    LockName<N>::append(raw, name);
    std::string key;
    key.reserve(prefix_.size() + ns_.size() + raw.size() + 16);
    key.append(prefix_).append(":RwLock:{").append(ns_).append(":");
    detail::append_escaped(key, raw);
    key.append("}:").push_back(role);
    return key;
  }

  std::string_view ns_;
  std::string_view prefix_;
  std::chrono::milliseconds ttl_;
  std::chrono::milliseconds intent_ttl_{0};
  bool fencing_ = false;
};

// Takes a reader lease: the script prunes expired readers, refuses while a writer holds the name
// (or, with writer preference, while a writer waits), else adds this id scored by the server's
// TIME + ttl.
template <class L>
class TryRead : public detail::RwAcquire<ReadToken<L>> {
 public:
  using effect = Write<L>;

  TryRead(std::string writer_key, std::string readers_key, std::string intent_key,
          std::chrono::milliseconds ttl)
      : detail::RwAcquire<ReadToken<L>>(std::move(writer_key), std::move(readers_key),
                                        std::move(intent_key), ttl, detail::kRwReaderLease) {}

  Request request() const { return this->script_request(detail::rw_try_read_script(), {}); }
};

// Takes the writer lease: the script prunes expired readers, refuses while a writer or a live
// reader holds the name (registering the writer's intent if the lock prefers writers).
template <class L>
class TryWrite : public detail::RwAcquire<LockToken<L>> {
 public:
  using effect = Write<L>;

  TryWrite(std::string writer_key, std::string readers_key, std::string intent_key,
           std::chrono::milliseconds ttl, std::chrono::milliseconds intent_ttl,
           std::optional<detail::FenceCounters> fence = std::nullopt)
      : detail::RwAcquire<LockToken<L>>(std::move(writer_key), std::move(readers_key),
                                        std::move(intent_key), ttl, detail::kRwWriterLease,
                                        std::move(fence)),
        intent_ttl_(std::to_string(intent_ttl.count())) {}

  Request request() const {
    return this->script_request(detail::rw_try_write_script(), intent_ttl_);
  }

 private:
  std::string intent_ttl_;
};

// A query yielding bool: an RwLock's release_by_id() or extend_by_id().
template <class L>
class ActById {
 public:
  using result_type = bool;
  using effect = Write<L>;

  explicit ActById(Request request) : request_(std::move(request)) {}

  Request request() const { return request_; }
  Result<bool> parse(const Reply& reply, const Timing&) const { return detail::one_or_zero(reply); }

 private:
  Request request_;
};

}  // namespace leasehold
