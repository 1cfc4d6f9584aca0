// Election<N>: a leader per name. A campaign waits in turn to lead (a fenced lease of its own key
// family); the leader's token carries its term, a fencing number strictly increasing per name,
// and it may publish a value for the others to read. A leader that stops extending its lease,
// or resigns, lets the next campaigner in.
//
//   const leasehold::Election<std::string> schedulers{"scheduler", 10s};
//   auto leader = leasehold::wait_until(redis, schedulers.campaign("eu"), deadline);
//   if (leader) {
//     redis.process(schedulers.proclaim(*leader, "10.0.0.7:8080"));
//     ... lead, extending the lease (while_held / KeepAlive), with term leader->fence() ...
//     redis.process(schedulers.resign(*leader));
//   }
//   auto now = redis.process(schedulers.leader("eu"));   // std::optional<Leader>
//
// See docs/election.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/detail/election.hpp"
#include "leasehold/detail/keys.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/detail/lock.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/leader.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/query.hpp"
#include "leasehold/turn.hpp"
#include "leasehold/watch.hpp"

namespace leasehold {

template <LockNameType N>
class Election {
 public:
  using name_type = N;

  constexpr Election(std::string_view ns, std::chrono::milliseconds ttl,
                     std::string_view prefix = kDefaultPrefix)
      : ns_(ns), prefix_(prefix), ttl_(ttl) {
    detail::validate_namespace(ns);
    detail::validate_prefix(prefix);
    detail::validate_ttl(ttl);
  }

  constexpr std::string_view name_space() const noexcept { return ns_; }
  constexpr std::string_view prefix() const noexcept { return prefix_; }
  constexpr std::chrono::milliseconds ttl() const noexcept { return ttl_; }

  // "<prefix>:Election:{<namespace>:<escaped name>}" (docs/keys.md): the leader's lease.
  std::string key(const N& name) const { return tagged_key(name, ""); }
  // The term counter, "<key>:term", and the proclaimed value, "<key>:value", in its hash slot.
  std::string term_key(const N& name) const { return tagged_key(name, ":term"); }
  std::string value_key(const N& name) const { return value_key_of(key(name)); }
  // A hash tag, braces included, for keys that must share the lease's hash slot (the keys of
  // guarded writes, guarded.hpp): "invoice:" + hash_tag(name) + ":row".
  std::string hash_tag(const N& name) const { return same_slot_tag(key(name)); }
  // The name whose leader key `key` is (a key found by SCAN), or nothing for any other key.
  std::optional<std::string> name_of_key(
      std::string_view key) const requires std::same_as<N, std::string> {
    return detail::name_in_tagged_key(
        key, std::string(prefix_) + ":Election:{" + std::string(ns_) + ":", {""});
  }

  // A campaign for `name`, for wait_until() (wait.hpp): the campaigner takes a place in the
  // name's queue, is told when the leader goes, and leads with a token whose fence() is its
  // term. Its lease is a lease like a Lock's: extend it (while_held, KeepAlive) or lose it.
  InTurn<LockToken<Election>> campaign(const N& name) const {
    return detail::TurnAccess::make<LockToken<Election>>(detail::lock_turn(
        key(name), ttl_, detail::FenceCounters{term_key(name), {}, {}}, value_key(name)));
  }

  // Publishes `value` as the leader's, for this term: a query yielding true, or false when
  // `leader` no longer leads (its lease ran out, or it resigned).
  detail::Proclaim<Election> proclaim(const LockToken<Election>& leader,
                                      std::string_view value) const {
    return detail::Proclaim<Election>(leader.key(), value_key_of(leader.key()),
                                      term_key_of(leader.key()), leader.value(), value);
  }

  // Gives the leadership up, token-checked: a query yielding true, or false when `leader` did
  // not lead any more. The campaigners waiting are told at once. A resign whose outcome is
  // unknown (the connection was lost) leaves the token as it was: resign again, or let it run
  // out.
  ReleaseLock<Election> resign(const LockToken<Election>& leader) const { return leader.release(); }

  // Who leads `name` now: a query yielding std::optional<Leader> (none when nobody does).
  detail::LeaderQuery<Election> leader(const N& name) const {
    return detail::LeaderQuery<Election>(key(name), term_key(name), value_key(name));
  }

  // Who leads `name`, watched (watch.hpp): the leader now, then each new leader, each value a
  // leader proclaims, and each time nobody leads (a resign, an expiry, a deposition), for a
  // Watch to run.
  Observed<std::optional<Leader>> observe(const N& name) const {
    return detail::WatchAccess::lease<std::optional<Leader>, &detail::leader_seen>(
        detail::WatchTarget{key(name), term_key(name), value_key(name), true, {}});
  }

  // An operator's query: deposes whoever leads `name` and tells the campaigners; yields 1 if it
  // deleted a lease, else 0. The term counter stays: terms only grow.
  ForceRelease<Election> force_release(const N& name) const {
    return ForceRelease<Election>(detail::lock_force_release_request(key(name)));
  }

 private:
  std::string tagged_key(const N& name, std::string_view suffix) const {
    std::string raw;
    LockName<N>::append(raw, name);
    return detail::tagged_name_key(prefix_, "Election", ns_, raw, suffix);
  }
  static std::string value_key_of(std::string_view key) { return std::string(key) + ":value"; }
  static std::string term_key_of(std::string_view key) { return std::string(key) + ":term"; }

  std::string_view ns_;
  std::string_view prefix_;
  std::chrono::milliseconds ttl_;
};

}  // namespace leasehold
