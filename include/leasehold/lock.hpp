// Lock<N>: a lease mutex. At most one holder per name; a holder keeps the lock until it releases
// it or its TTL runs out.
//
//   constexpr leasehold::Lock<std::uint64_t> invoices{"invoice", 30s};
//   if (auto token = redis.process(invoices.try_lock(invoice_id))) {
//     finalize(invoice_id);
//     redis.process(token->release());   // true: released; false: the lease had run out
//   }
//
// Every lock operation is a query value run by a Client (sync or async) and never waits: busy is
// an empty optional, a lost lease is `false`. See docs/locks.md.
#pragma once

#include <charconv>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/fence_counters.hpp"
#include "leasehold/detail/keys.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/detail/lock.hpp"
#include "leasehold/detail/report.hpp"
#include "leasehold/detail/turn.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lease_info.hpp"
#include "leasehold/observed.hpp"
#include "leasehold/query.hpp"
#include "leasehold/slot.hpp"
#include "leasehold/turn.hpp"

namespace leasehold {

inline constexpr std::string_view kDefaultPrefix = "leasehold";

// Customization point: how a name of type T is written into a lock's key. Specialize it for your
// own name types; two different names must be written differently (the encoding must be
// injective). Strings are written as they are (binary-safe); integers in decimal.
template <class T>
struct LockName;

template <>
struct LockName<std::string> {
  static void append(std::string& key, std::string_view name) { key.append(name); }
};
template <>
struct LockName<std::string_view> : LockName<std::string> {};

template <std::integral T>
struct LockName<T> {
  // As std::to_string(name) writes it (the same promotion picks the overload), without a
  // temporary string.
  static void append(std::string& key, T name) {
    char digits[24];
    const auto written = std::to_chars(digits, digits + sizeof digits, +name);
    key.append(digits, written.ptr);
  }
};

template <class T>
concept LockNameType = requires(std::string& key, const T& name) {
  LockName<T>::append(key, name);
};

// A token's Side says which part of a primitive its lease holds, and names the token type when it
// is printed. A primitive with parts of its own (a shared lease, say) defines its own Side.
struct HolderSide {  // the sole holder of a name
  static constexpr std::string_view token_name = "LockToken";
};
template <class L, class Side>
class BasicToken;
// The token of a name's sole holder.
template <class L>
using LockToken = BasicToken<L, HolderSide>;
template <class L>
class TryLock;
template <class L>
class ReleaseLock;
template <class L>
class ExtendLock;

// A query yielding how many keys it deleted: a kind's force_release(), the operator's way out,
// which frees a name whoever holds it and tells its waiters.
template <class L>
class ForceRelease {
 public:
  using result_type = long long;
  using effect = Write<L>;

  explicit ForceRelease(Request request) : request_(std::move(request)) {}

  Request request() const { return request_; }
  Result<long long> parse(const Reply& reply, const Timing&) const {
    if (reply.is_error())
      return error_result<long long>(reply);
    if (reply.type != Reply::Type::integer)
      return Result<long long>(make_error_code(errc::unexpected_reply), to_string(reply));
    return reply.integer;
  }

 private:
  Request request_;
};

template <LockNameType N>
class Lock {
 public:
  using name_type = N;

  constexpr Lock(std::string_view ns, std::chrono::milliseconds ttl,
                 std::string_view prefix = kDefaultPrefix)
      : ns_(ns), prefix_(prefix), ttl_(ttl) {
    detail::validate_namespace(ns);
    detail::validate_prefix(prefix);
    detail::validate_ttl(ttl);
  }

  // Opt-in fencing numbers: every acquire also advances the fence counter (fence_counter_key(),
  // server_fence_counter_key()) in the same script and hands its value to the token
  // (token.fence()): strictly increasing per name in grant order, never expiring. A fenced lock has
  // keys of its own (docs/keys.md): a fenced and an unfenced Lock of one namespace do not exclude
  // each other, so a namespace is either fenced or not.
  constexpr Lock with_fencing() const {
    Lock copy = *this;
    copy.fencing_ = true;
    return copy;
  }

  constexpr std::string_view name_space() const noexcept { return ns_; }
  constexpr std::string_view prefix() const noexcept { return prefix_; }
  constexpr std::chrono::milliseconds ttl() const noexcept { return ttl_; }
  constexpr bool fencing() const noexcept { return fencing_; }

  // "<prefix>:Lock:<namespace>:<name>" (docs/keys.md); fenced:
  // "<prefix>:Lock:{<namespace>:<escaped name>}", so that its counter shares its hash slot.
  std::string key(const N& name) const {
    if (fencing_)
      return tagged_key(name, "");
    std::string key;
    key.reserve(prefix_.size() + ns_.size() + 8 + 20);
    key.append(prefix_).append(std::string_view(":Lock:")).append(ns_).push_back(':');
    LockName<N>::append(key, name);
    return key;
  }
  // A fenced lock's fence counter on a Redis Cluster: "<prefix>:Fences{<tag of the name's
  // slot>}", shared by every fenced name of the prefix in that hash slot; on a single server
  // "<prefix>:Fences", shared by every fenced name of the prefix (docs/keys.md, "Fence counters").
  std::string fence_counter_key(const N& name) const {
    return detail::fence_counter_key(prefix_, key(name));
  }
  std::string server_fence_counter_key() const { return detail::server_fence_counter_key(prefix_); }
  // The name's own counter of the per-name layout, "<prefix>:Lock:{<namespace>:<escaped
  // name>}:fence": a grant moves it into the fence counter (docs/keys.md).
  std::string own_fence_key(const N& name) const { return tagged_key(name, ":fence"); }
  // A hash tag, braces included, for keys that must share the lease's hash slot (the keys of
  // guarded writes, guarded.hpp): "invoice:" + hash_tag(name) + ":row".
  std::string hash_tag(const N& name) const { return same_slot_tag(key(name)); }

  // The name whose lease `key` is (as key() writes it, fenced or not), or nothing: for status
  // tools that find leases by SCAN. An unfenced key's name is all that follows the namespace.
  std::optional<std::string> name_of_key(
      std::string_view key) const requires std::same_as<N, std::string> {
    if (fencing_)
      return detail::name_in_tagged_key(
          key, std::string(prefix_) + ":Lock:{" + std::string(ns_) + ":", {""});
    const std::string head = std::string(prefix_) + ":Lock:" + std::string(ns_) + ":";
    if (!key.starts_with(head) || key.size() == head.size())
      return std::nullopt;
    return std::string(key.substr(head.size()));
  }

  // A query yielding std::optional<LockToken<Lock>>: a token if this call took the lock, nothing
  // if someone holds it. Never waits.
  TryLock<Lock> try_lock(const N& name) const {
    return fencing_ ? TryLock<Lock>(key(name), ttl_, fence_counters(name))
                    : TryLock<Lock>(key(name), ttl_);
  }

  // An operator's query: ends whoever holds the name and tells the waiter at the head of its
  // queue; yields 1 if it deleted a lease, else 0. The fencing counter stays: fences only grow.
  ForceRelease<Lock> force_release(const N& name) const {
    return ForceRelease<Lock>(detail::lock_force_release_request(key(name)));
  }

  // A wait in turn for `name`, for wait_until() (wait.hpp): the waiter takes a place in the
  // name's queue and is told when it is its turn.
  InTurn<LockToken<Lock>> in_turn(const N& name) const {
    return detail::TurnAccess::make<LockToken<Lock>>(detail::lock_turn(
        key(name), ttl_,
        fencing_ ? std::optional<detail::FenceCounters>(fence_counters(name)) : std::nullopt));
  }

  // Who holds `name`, watched (watch.hpp): the lease that holds it now (none when it is free),
  // then each change: a new holder, a release, an expiry, a delete, a value another client set.
  // An extension is not a change. Changes are told by the server's tracking of the key
  // (docs/locks.md, "Observing a lock's holder").
  Observed<std::optional<LeaseInfo>> observe(const N& name) const {
    return detail::WatchAccess::lease<std::optional<LeaseInfo>, &detail::lock_lease_seen>(
        detail::WatchTarget{key(name), std::nullopt, std::nullopt, false, {}});
  }

  // A token for the lease on `name` whose value() is `value`, taken by another process or an
  // earlier step: it extends (for this lock's TTL) and releases that lease, and yields false once
  // the lease has run out. Its deadline is now until an extend succeeds; it has no fencing
  // number. Throws Error(errc::invalid_argument) when `value` is not a lease's value.
  LockToken<Lock> adopt(const N& name, std::string_view value) const {
    return detail::TokenAccess::make<LockToken<Lock>>(
        detail::adopted_lease(key(name), value, ttl_, &detail::kLockLease));
  }

 private:
  detail::FenceCounters fence_counters(const N& name) const {
    return detail::fence_counters(prefix_, key(name), own_fence_key(name));
  }
  std::string tagged_key(const N& name, std::string_view suffix) const {
    std::string raw;
    LockName<N>::append(raw, name);
    return detail::tagged_name_key(prefix_, "Lock", ns_, raw, suffix);
  }

  std::string_view ns_;
  std::string_view prefix_;
  std::chrono::milliseconds ttl_;
  bool fencing_ = false;
};

// Proof of holding a lease: the only way to release or extend it. Move-only; dropping a token
// does not release the lock (the lease runs out at its TTL).
template <class L, class Side>
class BasicToken {
 public:
  using lock_type = L;

  BasicToken(BasicToken&&) noexcept = default;
  BasicToken& operator=(BasicToken&&) noexcept = default;
  BasicToken(const BasicToken&) = delete;
  BasicToken& operator=(const BasicToken&) = delete;

  const std::string& key() const noexcept { return state_->key; }
  const LeaseId& id() const noexcept { return state_->id; }
  std::chrono::milliseconds ttl() const noexcept { return state_->ttl; }
  // The lease as Redis holds it: the id's 32 hex digits and its holder (holder.hpp). Like the id,
  // a credential: the primitive's adopt() makes a token of it in another process, which can then
  // extend and release the lease. Never log it.
  const std::string& value() const noexcept { return state_->value; }

  // The fencing number of a fenced lock's acquire (strictly increasing per name in grant order),
  // for a resource that refuses writes with a smaller one; nothing for an unfenced lock.
  std::optional<std::uint64_t> fence() const noexcept {
    if (state_->fence == 0)
      return std::nullopt;
    return state_->fence;
  }

  // A fenced lease on several names (lock_set.hpp): the fencing number of each name, in the
  // order of LockSet::names() (fence() is the first's). Empty for a lease on one name, and when
  // not fenced.
  const std::vector<std::uint64_t>& fences() const noexcept { return state_->fences; }

  // Until when this process may act as the holder, by its own steady clock.
  Clock::time_point deadline() const noexcept { return state_->deadline(); }
  Clock::duration valid_for(Clock::time_point now = Clock::now()) const noexcept {
    const auto left = deadline() - now;
    return left > Clock::duration::zero() ? left : Clock::duration::zero();
  }
  bool expired(Clock::time_point now = Clock::now()) const noexcept { return now >= deadline(); }

  // A query yielding bool: true if this token held the lock and it is now released; false if
  // the lease had run out (and then nothing is deleted).
  ReleaseLock<L> release() const { return ReleaseLock<L>(state_); }
  // A query yielding bool: true if this token held the lock and its lease restarts for another
  // TTL (the token's deadline moves); false if the lease had run out (nothing is resurrected).
  ExtendLock<L> extend() const { return ExtendLock<L>(state_); }

  friend bool operator==(const BasicToken& a, const BasicToken& b) noexcept {
    return a.state_->id == b.state_->id && a.state_->key == b.state_->key;
  }
  friend std::ostream& operator<<(std::ostream& out, const BasicToken& token) {
    return out << Side::token_name << '(' << token.key() << ", " << token.id() << ")";
  }

 private:
  friend struct detail::TokenAccess;
  explicit BasicToken(std::shared_ptr<detail::LeaseState> state) : state_(std::move(state)) {}

  std::shared_ptr<detail::LeaseState> state_;
};

// SET key id NX PX ttl GET: takes the lock in one round trip. GET makes it idempotent: a retry of
// the same query (same id) after a lost reply sees its own id and reports success, with the
// deadline counted from the first send. The request is retry-safe; when its outcome stays
// unknown, the client releases this id (best effort) so that no lease is orphaned.
template <class L>
class TryLock {
 public:
  using result_type = std::optional<LockToken<L>>;
  using effect = Write<L>;

  TryLock(std::string key, std::chrono::milliseconds ttl)
      : key_(std::move(key)),
        ttl_(ttl),
        id_(LeaseId::generate()),
        value_(id_.hex() + detail::holder_suffix()) {}
  // Stores the bare id: no holder identity (a key other clients' locks share).
  TryLock(std::string key, std::chrono::milliseconds ttl, detail::BareValue)
      : key_(std::move(key)), ttl_(ttl), id_(LeaseId::generate()), value_(id_.hex()) {}
  // With fence counters, the acquire is a script that also counts a fence (fenced locks). With
  // a label, the holder's identity carries it instead of the process's (holder.hpp).
  TryLock(std::string key, std::chrono::milliseconds ttl,
          std::optional<detail::FenceCounters> fence, std::string_view holder_label = {})
      : key_(std::move(key)),
        fence_(std::move(fence)),
        ttl_(ttl),
        id_(LeaseId::generate()),
        value_(id_.hex() + detail::holder_suffix(holder_label)) {}

  const std::string& key() const noexcept { return key_; }
  const LeaseId& id() const noexcept { return id_; }
  // What the key holds once this acquire is granted: the id and its holder (holder.hpp).
  const std::string& value() const noexcept { return value_; }

  Request request() const {
    const std::string_view id(value_);
    const detail::DecimalDigits ttl(ttl_.count());
    if (fence_) {
      const std::string_view keys[] = {key_, fence_->slot, fence_->own};
      const std::string_view args[] = {id, ttl.view()};
      return detail::fenced_script(detail::lock_try_fenced_script(), keys, args, fence_)
          .retry_safe()
          .grants_lease();
    }
    return Request::command({"SET", key_, id, "NX", "PX", ttl.view(), "GET"})
        .for_key(key_)
        .retry_safe()
        .grants_lease();
  }

  // A token's lease state holds the key: parse() copies it there; the rvalue parse(), for a query
  // run once (the client runs its own copy), moves it, and only into a token: any other outcome
  // leaves the query whole, for on_unknown_outcome().
  Result<result_type> parse(const Reply& reply, const Timing& timing) const& {
    return parse_as(*this, reply, timing);
  }
  Result<result_type> parse(const Reply& reply, const Timing& timing) && {
    return parse_as(std::move(*this), reply, timing);
  }

  std::optional<Request> on_unknown_outcome() const {
    return detail::lock_release_request(key_, value_);
  }

  void report(Observer& observer, const Result<result_type>& outcome,
              const Timing& timing) const noexcept {
    detail::report_try(observer, key_, outcome, timing);
  }

 private:
  // Self: const TryLock& (the key is copied into a token) or TryLock (it is moved).
  template <class Self>
  static Result<result_type> parse_as(Self&& self, const Reply& reply, const Timing& timing) {
    if (reply.is_error())
      return error_result<result_type>(reply);
    std::uint64_t fence = 0;
    if (self.fence_) {
      if (!detail::fence_of(reply, fence))
        return Result<result_type>(make_error_code(errc::unexpected_reply), to_string(reply));
      if (fence == 0)
        return result_type{};  // someone else holds it
    } else if (!reply.is_nil()) {
      // nil: it was free and is taken now; this id (bare, or marked by a waiter): a retry found
      // its own lease.
      if (reply.type != Reply::Type::string)
        return Result<result_type>(make_error_code(errc::unexpected_reply), to_string(reply));
      if (detail::lock_holder(reply.str) != self.value_)
        return result_type{};  // someone else holds it
    }
    const Clock::time_point deadline = lease_deadline(timing.sent, self.ttl_);
    if (timing.received >= deadline)
      return detail::granted_too_late<result_type>();
    // The key is copied (const Self) or moved (an rvalue Self) into the lease state.
    auto state = std::make_shared<detail::LeaseState>(std::forward<Self>(self).key_, self.id_,
                                                      self.ttl_, deadline, &detail::kLockLease,
                                                      std::string(), self.value_);
    state->fence = fence;
    return result_type{detail::TokenAccess::make<LockToken<L>>(std::move(state))};
  }

  std::string key_;
  std::optional<detail::FenceCounters> fence_;  // a fenced lock's
  std::chrono::milliseconds ttl_;
  LeaseId id_;
  std::string value_;  // the id and its holder, as sent and compared, computed once
};

// The lease kind's release script -> 1 released, 0 not held by this id (see detail::LeaseKind).
// Not retry-safe: a second run after a lost reply would answer 0 for a lease it did release.
template <class L>
class ReleaseLock {
 public:
  using result_type = bool;
  using effect = Write<L>;

  explicit ReleaseLock(std::shared_ptr<detail::LeaseState> state) : state_(std::move(state)) {}

  Request request() const { return detail::lease_request(*state_, false); }

  Result<bool> parse(const Reply& reply, const Timing&) const {
    return detail::held_in_every_part(reply, *state_);
  }

  void report(Observer& observer, const Result<bool>& outcome,
              const Timing& timing) const noexcept {
    detail::report_release(observer, *state_, outcome && *outcome, outcome.error(), timing);
  }

 private:
  std::shared_ptr<detail::LeaseState> state_;
};

// The lease kind's extend script -> 1 restarted, 0 not held by this id (an ended lease stays
// gone). Retry-safe: running it twice restarts the TTL twice.
template <class L>
class ExtendLock {
 public:
  using result_type = bool;
  using effect = Write<L>;

  explicit ExtendLock(std::shared_ptr<detail::LeaseState> state)
      : state_(std::move(state)), deadline_before_(state_->deadline()) {}

  Request request() const { return detail::lease_request(*state_, true).retry_safe(); }

  Result<bool> parse(const Reply& reply, const Timing& timing) const {
    Result<bool> extended = detail::held_in_every_part(reply, *state_);
    if (!extended || !*extended)
      return extended;
    const Clock::time_point deadline = lease_deadline(timing.sent, state_->ttl);
    if (timing.received >= deadline)
      return false;  // too late: it may have run out meanwhile
    state_->extend_to(deadline);
    return true;
  }

  // A lease on names of several slots that one part found gone is lost: the others give it back.
  std::optional<Request> leftover(const Reply& reply) const {
    if (!detail::lost_in_some_part(reply, *state_))
      return std::nullopt;
    return detail::lease_request(*state_, false);
  }

  void report(Observer& observer, const Result<bool>& outcome,
              const Timing& timing) const noexcept {
    detail::report_extension(observer, *state_, deadline_before_, outcome && *outcome,
                             outcome.error(), timing);
  }

 private:
  std::shared_ptr<detail::LeaseState> state_;
  Clock::time_point deadline_before_;  // what the lease had before this extension
};

}  // namespace leasehold
