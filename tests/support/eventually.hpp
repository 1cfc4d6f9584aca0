// Waiting for a condition in tests: poll against a deadline, never sleep as synchronisation.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "redis_server.hpp"

namespace leasehold::testing {

// True as soon as predicate() is; false if `timeout` passed first.
template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                std::chrono::milliseconds poll = std::chrono::milliseconds(2)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate())
      return true;
    std::this_thread::sleep_for(poll);  // polling against a deadline
  }
  return predicate();
}

// How many times the server ran `command` (lowercase), from INFO commandstats.
inline long long command_calls(const RedisServer& server, const std::string& command) {
  const std::string info = server.command({"INFO", "commandstats"}).str;
  const std::string needle = "cmdstat_" + command + ":calls=";
  const auto at = info.find(needle);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + needle.size()));
}

}  // namespace leasehold::testing
