// How many keys of a server match a pattern, by SCAN (never KEYS).
#pragma once

#include <cstddef>
#include <string>

#include "redis_server.hpp"

namespace leasehold::testing {

inline std::size_t count_keys(const RedisServer& server, const std::string& pattern) {
  std::size_t count = 0;
  std::string cursor = "0";
  do {
    const Reply page = server.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "10000"});
    cursor = page.elements.at(0).str;
    count += page.elements.at(1).elements.size();
  } while (cursor != "0");
  return count;
}

}  // namespace leasehold::testing
