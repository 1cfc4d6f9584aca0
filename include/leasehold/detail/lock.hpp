// A Lock's machinery: its lease kind, its scripts and requests, its turn contract, and what its
// key's value says.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/detail/fence_counters.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

class TurnContract;  // detail/turn.hpp

// A lock key holds its holder's lease value, bare while nobody waits for it nor observes it; a
// waiter refused while the lock is held marks it with the values of the first two waiters
// ("<value>:<head> <second>"), an observer with a "*", so that the release tells them
// (src/lease/scripts/lock_holder.lua). The holder is the value up to the ':'.
constexpr std::string_view lock_holder(std::string_view value) {
  return value.substr(0, value.find(':'));
}

// The release of the lease `id_hex` on a lock key: it tells the waiters the key names, if any,
// and, for a kind that can be observed (an Election), the observers.
Request lock_release_request(std::string_view key, std::string_view id_hex,
                             bool observable = false);
// The operator's release of whoever holds a lock key; it tells the waiters the key names, if any.
Request lock_force_release_request(std::string_view key);
const Script& lock_try_fenced_script();

// A Lock's turn contract (detail/queue.hpp); an Election's, with its proclaimed value's key (and
// its term key as the fence counter, without an own counter).
std::shared_ptr<const TurnContract> lock_turn(std::string key, std::chrono::milliseconds ttl,
                                              std::optional<FenceCounters> fence,
                                              std::optional<std::string> value_key = std::nullopt);

// A Lock's lease: a key that holds the lease's id. A lease state without a kind is one. Each
// kind's table is defined with its scripts, in src/lease/.
extern const LeaseKind kLockLease;

// A fenced acquire's reply: the fencing number (>= 1) if this id holds the lease, 0 if another
// does.
inline bool fence_of(const Reply& reply, std::uint64_t& fence) {
  if (reply.type != Reply::Type::integer || reply.integer < 0)
    return false;
  fence = static_cast<std::uint64_t>(reply.integer);
  return true;
}

// A raw key's turn contract: plain tries (SET NX PX GET) with the waiter's bare id (raw_lock.hpp).
std::shared_ptr<const TurnContract> raw_turn(std::string key, std::chrono::milliseconds ttl);

}  // namespace leasehold::detail
