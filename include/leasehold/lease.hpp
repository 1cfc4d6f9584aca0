// What every lease has: a random id (the proof of holding) and a client-side deadline.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "leasehold/clock.hpp"
#include "leasehold/error.hpp"

namespace leasehold {

// 16 random bytes from the OS CSPRNG (getrandom(2)). Stored in Redis as 32 hex digits. Printing
// shows only a short prefix: a whole id is a credential and never goes to a log.
class LeaseId {
 public:
  static constexpr std::size_t kSize = 16;
  using HexDigits = std::array<char, 2 * kSize>;

  static LeaseId generate();
  // From 32 hex digits (e.g. LEASEHOLD_TOKEN); throws Error(errc::invalid_argument) otherwise.
  static LeaseId from_hex(std::string_view hex);

  const std::array<std::uint8_t, kSize>& bytes() const noexcept { return bytes_; }
  std::string hex() const;        // all 32 hex digits: for Redis and for a child process's env
  std::string short_hex() const;  // the first 8 hex digits and "…": for people and logs
  HexDigits hex_digits() const noexcept;  // the 32 hex digits without allocating

  friend auto operator<=>(const LeaseId&, const LeaseId&) = default;
  friend std::ostream& operator<<(std::ostream& out, const LeaseId& id) {
    return out << id.short_hex();
  }

 private:
  std::array<std::uint8_t, kSize> bytes_{};
};

// The client-side deadline of a lease acquired or extended by a request handed to the connection
// at `sent`: the server's expiry is at least `sent + ttl` away, because the server starts the TTL
// when it runs the command, after `sent`. The margin covers clock-rate drift between client and
// server (1% of the TTL) plus 2 ms.
constexpr Clock::duration lease_margin(std::chrono::milliseconds ttl) {
  return ttl / 100 + std::chrono::milliseconds(2);
}
constexpr Clock::time_point lease_deadline(Clock::time_point sent, std::chrono::milliseconds ttl) {
  return sent + ttl - lease_margin(ttl);
}

// When a kept-alive lease is extended next: two thirds of its TTL before its deadline (a third
// of the TTL after it was granted), so that two more tries fit before it runs out; at once when
// that moment has passed (a token that was kept a while before its keep-alive started).
constexpr Clock::time_point next_extension(Clock::time_point deadline,
                                           std::chrono::milliseconds ttl) {
  return deadline - ttl * 2 / 3;
}

// The longest TTL leasehold accepts: far above any sensible lease, far below where Clock
// arithmetic or Redis' PX would overflow.
inline constexpr std::chrono::milliseconds kMaxTtl = std::chrono::hours(24 * 365 * 10);

namespace detail {

// How a lease is released and extended: the primitive whose acquire grants the lease defines its
// kind (see lock.hpp).
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

}  // namespace detail
}  // namespace leasehold
