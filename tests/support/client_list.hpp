// What a test server's CLIENT LIST says of a connection.
#pragma once

#include <sstream>
#include <string>

#include "redis_server.hpp"

namespace leasehold::testing {

// The id of the connection named `name`, from CLIENT LIST; empty if none.
inline std::string client_id(const RedisServer& server, const std::string& name) {
  std::istringstream lines(server.command({"CLIENT", "LIST"}).str);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" name=" + name + " ") == std::string::npos)
      continue;
    const auto start = line.find("id=") + 3;
    return line.substr(start, line.find(' ', start) - start);
  }
  return {};
}

}  // namespace leasehold::testing
