// The shared state of one held lease, and the check a TTL gets where it is given (lease.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.hpp"
#include "leasehold/error.hpp"
#include "leasehold/lease.hpp"

namespace leasehold::detail {

// How a lease is released and extended: the primitive whose acquire grants the lease defines its
// kind (detail/lease_kind.hpp).
struct LeaseKind;

// The state of one held lease, shared by its token and by the queries that extend it (an extend
// in flight may complete after the token moved). The deadline only moves forward.
struct LeaseState {
  // `value`: what Redis holds for the lease (its id's hex digits and its holder, holder.hpp).
  LeaseState(std::string key, LeaseId id, std::chrono::milliseconds ttl, Clock::time_point deadline,
             const LeaseKind* kind = nullptr, std::string second_key = {}, std::string value = {})
      : key(std::move(key)),
        second_key(std::move(second_key)),
        kind(kind),
        id(id),
        value(value.empty() ? id.hex() : std::move(value)),
        ttl(ttl),
        deadline_ns(deadline.time_since_epoch().count()),
        granted_at(deadline - ttl + lease_margin(ttl)) {}

  Clock::time_point deadline() const noexcept {
    return Clock::time_point(Clock::duration(deadline_ns.load(std::memory_order_acquire)));
  }
  void extend_to(Clock::time_point deadline) noexcept {
    auto wanted = deadline.time_since_epoch().count();
    auto current = deadline_ns.load(std::memory_order_relaxed);
    while (current < wanted &&
           !deadline_ns.compare_exchange_weak(current, wanted, std::memory_order_acq_rel)) {
    }
  }

  // The id's 32 hex digits, as sent to Redis.
  std::string_view id_hex() const noexcept { return {id_digits.begin(), id_digits.end()}; }

  const std::string key;
  const std::string second_key;  // a second key its kind's scripts take, or empty
  const LeaseKind* const kind;   // nullptr: a key that holds the lease's id (a Lock's lease)
  const LeaseId id;
  const LeaseId::HexDigits id_digits = id.hex_digits();
  // As stored in Redis and compared by the scripts: the id's hex digits, then its holder's
  // identity when it was taken with one (holder.hpp).
  const std::string value;
  const std::chrono::milliseconds ttl;
  std::atomic<Clock::rep> deadline_ns;
  // When the acquire was handed to the connection (its deadline counts from there); an adopted
  // lease's, when it was adopted. Set before the state is shared.
  Clock::time_point granted_at;
  // The fencing number of a fenced acquire (>= 1), 0 for none. Set before the state is shared.
  std::uint64_t fence = 0;
  // A lease on several names (lock_set.hpp): the keys after `key`, and (fenced) the fencing
  // number of each key, `key`'s first. Empty for a lease on one name. Set before the state is
  // shared.
  std::vector<std::string> more_keys;
  std::vector<std::uint64_t> fences;
  // A lease on names of several hash slots: how many (on a cluster its release and extend go as
  // one call per slot, and their reply is the array of those calls' replies); 0 otherwise. Set
  // before the state is shared.
  std::size_t slot_parts = 0;
};

// Checks done where a TTL is given; in a constant expression a bad TTL is a compile error.
constexpr void validate_ttl(std::chrono::milliseconds ttl) {
  if (ttl <= std::chrono::milliseconds::zero())
    throw Error(
        make_error_code(errc::invalid_argument),
        "the TTL must be positive (at least 1 ms), got " + std::to_string(ttl.count()) + " ms");
  if (ttl > kMaxTtl)
    throw Error(make_error_code(errc::invalid_argument),
                "the TTL must be at most 10 years, got " + std::to_string(ttl.count()) + " ms");
}

}  // namespace leasehold::detail
