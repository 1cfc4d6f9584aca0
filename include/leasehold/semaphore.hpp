// Semaphore<N>: at most `permits` holders per name, each with a lease of its own.
//
//   constexpr leasehold::Semaphore<std::string> exports{"exports", 4, 30s};  // 4 at a time
//   if (auto permit = redis.process(exports.try_acquire("s3"))) { upload(); ... }
//   auto permit = leasehold::acquire_for(redis, exports, "s3", 10s);         // waits in turn
//
// try_acquire never waits: a permit token, or nothing when every permit is held. A holder that
// crashes gives its permit back when its lease runs out, never earlier. See docs/semaphore.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/semaphore.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {

// One of a name's permit holders.
struct PermitSide {
  static constexpr std::string_view token_name = "PermitToken";
};
template <class L>
using PermitToken = BasicToken<L, PermitSide>;

template <class L>
class TryAcquire;

template <LockNameType N>
class Semaphore {
 public:
  using name_type = N;

  constexpr Semaphore(std::string_view ns, std::uint32_t permits, std::chrono::milliseconds ttl,
                      std::string_view prefix = kDefaultPrefix)
      : ns_(ns), prefix_(prefix), permits_(permits), ttl_(ttl) {
    detail::validate_namespace(ns);
    detail::validate_prefix(prefix);
    detail::validate_permits(permits);
    detail::validate_ttl(ttl);
  }

  // Opt-in fencing numbers: each grant advances the fence counter (fence_counter_key(),
  // server_fence_counter_key(), never expiring) and the permit's token.fence() gives it: strictly
  // increasing per name in grant order.
  constexpr Semaphore with_fencing() const {
    Semaphore copy = *this;
    copy.fencing_ = true;
    return copy;
  }
  constexpr bool fencing() const noexcept { return fencing_; }

  constexpr std::string_view name_space() const noexcept { return ns_; }
  constexpr std::string_view prefix() const noexcept { return prefix_; }
  constexpr std::uint32_t permits() const noexcept { return permits_; }
  constexpr std::chrono::milliseconds ttl() const noexcept { return ttl_; }

  // "<prefix>:Semaphore:{<namespace>:<escaped name>}:h" (and ":n"): one hash slot per name.
  // ":n" holds the count of the last grant, for status tools; no acquire reads it.
  std::string holders_key(const N& name) const { return key(name, 'h'); }
  std::string count_key(const N& name) const { return key(name, 'n'); }
  // A fenced semaphore's fence counter on a Redis Cluster: "<prefix>:Fences{<tag of the name's
  // slot>}", shared by every fenced name of the prefix in that slot; on a single server
  // "<prefix>:Fences", shared by every fenced name of the prefix (docs/keys.md, "Fence counters").
  std::string fence_counter_key(const N& name) const {
    return detail::fence_counter_key(prefix_, holders_key(name));
  }
  std::string server_fence_counter_key() const { return detail::server_fence_counter_key(prefix_); }
  // The name's own counter of the per-name layout (":f"), which a grant moves into the fence
  // counter.
  std::string own_fence_key(const N& name) const { return key(name, 'f'); }
  // A hash tag, braces included, for keys that must share the lease's hash slot (the keys of
  // guarded writes, guarded.hpp): "invoice:" + hash_tag(name) + ":row".
  std::string hash_tag(const N& name) const { return same_slot_tag(holders_key(name)); }

  // The name whose holders' key `key` is, or nothing: for status tools that find leases by SCAN.
  std::optional<std::string> name_of_key(
      std::string_view key) const requires std::same_as<N, std::string> {
    return detail::name_in_tagged_key(
        key, std::string(prefix_) + ":Semaphore:{" + std::string(ns_) + ":", {":h"});
  }

  // Waits in turn for a permit on `name`, for wait_until() (wait.hpp).
  InTurn<PermitToken<Semaphore>> in_turn(const N& name) const {
    return detail::TurnAccess::make<PermitToken<Semaphore>>(detail::permit_turn(
        {holders_key(name), count_key(name), fence_counters(name)}, ttl_, permits_));
  }

  // An operator's query: ends every permit of the name and tells the waiter at the head of its
  // queue; yields how many of its holders' set and count it deleted. The fencing counter stays.
  ForceRelease<Semaphore> force_release(const N& name) const {
    return ForceRelease<Semaphore>(
        detail::permit_force_release_request(holders_key(name), count_key(name)));
  }

  // Who holds `name`'s permits, watched (watch.hpp): the permits' leases now (empty when none is
  // taken), then each change of them: a permit taken, released or run out, the set deleted. An
  // extension is not a change. See docs/semaphore.md, "Observing".
  Observed<std::vector<LeaseInfo>> observe(const N& name) const {
    return detail::WatchAccess::described(
        detail::WatchTarget{holders_key(name),
                            std::nullopt,
                            std::nullopt,
                            false,
                            {{}, holders_key(name), LeaseInfo::Kind::permit, {}, {}, {}, {}, {}}});
  }

  // A query yielding std::optional<PermitToken<Semaphore>>.
  TryAcquire<Semaphore> try_acquire(const N& name) const {
    return TryAcquire<Semaphore>(holders_key(name), count_key(name), permits_, ttl_,
                                 fence_counters(name));
  }

 private:
  std::optional<detail::FenceCounters> fence_counters(const N& name) const {
    if (!fencing_)
      return std::nullopt;
    return detail::fence_counters(prefix_, holders_key(name), own_fence_key(name));
  }
  std::string key(const N& name, char role) const {
    std::string raw;
    LockName<N>::append(raw, name);
    std::string key;
    key.reserve(prefix_.size() + ns_.size() + raw.size() + 20);
    key.append(prefix_).append(":Semaphore:{").append(ns_).append(":");
    detail::append_escaped(key, raw);
    key.append("}:").push_back(role);
    return key;
  }

  std::string_view ns_;
  std::string_view prefix_;
  std::uint32_t permits_;
  std::chrono::milliseconds ttl_;
  bool fencing_ = false;
};

// Takes a permit if fewer than `permits` live leases hold the name (expired ones are pruned
// first, by the server's clock). Retry-safe: a rerun with the same id finds its permit. Like
// try_lock, it does not queue: a free permit is taken ahead of the waiters.
template <class L>
class TryAcquire {
 public:
  using result_type = std::optional<PermitToken<L>>;
  using effect = Write<L>;

  TryAcquire(std::string holders_key, std::string count_key, std::uint32_t permits,
             std::chrono::milliseconds ttl,
             std::optional<detail::FenceCounters> fence = std::nullopt)
      : holders_key_(std::move(holders_key)),
        count_key_(std::move(count_key)),
        fence_(std::move(fence)),
        permits_(permits),
        ttl_(ttl),
        id_(LeaseId::generate()),
        value_(id_.hex() + detail::holder_suffix()) {}

  const LeaseId& id() const noexcept { return id_; }

  Request request() const {
    const detail::DecimalDigits ttl(ttl_.count());
    const detail::DecimalDigits permits(permits_);
    const std::string_view keys[] = {holders_key_, count_key_,
                                     fence_ ? std::string_view(fence_->slot) : std::string_view(),
                                     fence_ ? std::string_view(fence_->own) : std::string_view()};
    const std::string_view args[] = {value_, ttl.view(), permits.view()};
    return detail::fenced_script(detail::permit_acquire_script(), std::span(keys, fence_ ? 4 : 2),
                                 args, fence_)
        .retry_safe()
        .grants_lease();
  }

  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    if (reply.is_error())
      return error_result<result_type>(reply);
    if (reply.type != Reply::Type::integer)
      return Result<result_type>(make_error_code(errc::unexpected_reply), to_string(reply));
    if (reply.integer <= 0)
      return result_type{};
    const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
    if (timing.received >= deadline)
      return detail::granted_too_late<result_type>();
    auto state = std::make_shared<detail::LeaseState>(holders_key_, id_, ttl_, deadline,
                                                      &detail::kPermitLease, count_key_, value_);
    if (fence_)
      state->fence = static_cast<std::uint64_t>(reply.integer);
    return result_type{detail::TokenAccess::make<PermitToken<L>>(std::move(state))};
  }

  // The acquire may have run: release this id (best effort).
  std::optional<Request> on_unknown_outcome() const {
    const detail::LeaseState state(holders_key_, id_, ttl_, Clock::time_point{},
                                   &detail::kPermitLease, count_key_, value_);
    return detail::lease_request(state, false);
  }

  void report(Observer& observer, const Result<result_type>& outcome,
              const Timing& timing) const noexcept {
    detail::report_try(observer, holders_key_, outcome, timing);
  }

 private:
  std::string holders_key_;
  std::string count_key_;
  std::optional<detail::FenceCounters> fence_;  // a fenced semaphore's
  std::uint32_t permits_;
  std::chrono::milliseconds ttl_;
  LeaseId id_;
  std::string value_;  // the id and its holder, as stored
};

}  // namespace leasehold
