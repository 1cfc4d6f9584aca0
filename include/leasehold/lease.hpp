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

}  // namespace leasehold
