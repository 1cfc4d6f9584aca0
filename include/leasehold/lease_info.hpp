// What a status read finds (describe.hpp): a name's leases, each with its holder and how long it
// has left, and what surrounds them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "leasehold/holder.hpp"

namespace leasehold {

struct LeaseInfo {
  enum class Kind { exclusive, shared, permit };
  Kind kind = Kind::exclusive;
  std::string id_prefix;  // the first 8 hex digits of the lease's id
  std::optional<Holder> holder;
  // By the server's clock; negative for a key that has no TTL (a raw key another client set
  // without one).
  std::chrono::milliseconds time_left{0};
};

// A name's leases and what surrounds them.
struct LeaseStatus {
  std::vector<LeaseInfo> leases;  // the leases that hold the name now
  // How many wait in turn for it (a waiter that died is counted until its place runs out).
  std::uint64_t waiters = 0;
  // The last fencing number its fence counter gave, which other names share (docs/keys.md): no
  // less than the holder's; none for a kind without fencing, or before the counter's first.
  std::optional<std::uint64_t> fence;
  // A Semaphore's count of permits at its last grant; none for other kinds.
  std::optional<std::uint64_t> permits;
};

}  // namespace leasehold
