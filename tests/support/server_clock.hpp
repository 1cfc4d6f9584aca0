// A server's clock as a fenced grant reads it: fencing numbers are never below the clock of their
// grant in microseconds (src/lease/scripts/fence_grant.lua).
#pragma once

#include <cstdint>
#include <string>

#include "redis_server.hpp"

namespace leasehold::testing {

// TIME of `server`, in microseconds since the epoch.
inline std::uint64_t server_clock_us(const RedisServer& server) {
  const Reply time = server.command({"TIME"});
  return std::stoull(time.elements.at(0).str) * 1'000'000 + std::stoull(time.elements.at(1).str);
}

}  // namespace leasehold::testing
