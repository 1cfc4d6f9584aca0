// The pieces of `leasehold doctor` that its files share: the findings, the raw command it sends,
// and the permission checks (doctor_permissions.cpp) that the rest (doctor.cpp) runs.
#pragma once

#include <string>
#include <vector>

#include "leasehold/leasehold.hpp"

namespace leasehold::cli::doctor_detail {

enum class Level { ok, warning, problem };

struct Finding {
  std::string check;  // a stable name: "version", "maxmemory-policy", "locks", ...
  Level level = Level::ok;
  std::string message;  // the line to print; it names the check in its own words
};

// A raw command whose error reply is a value, not an exception: doctor judges refusals itself.
// Failing to reach Redis still throws (and exits 69).
Reply ask(Client& client, const std::vector<std::string>& args);

bool is_noperm(const Reply& reply);

// "'app'": a user name as messages show it.
std::string quoted(const std::string& user);

// A server's error up to its first full stop: one line stays short.
std::string first_sentence(const std::string& text);

// The findings "locks", "waiting" and "notifications": whether `user` may run each command
// leasehold sends, tried on `client` (and SSUBSCRIBE on a connection of its own to `url`) with
// `scratch` as key and channel name. `prefix` names the key and channel patterns to grant.
std::vector<Finding> permission_findings(Client& client, const RedisUrl& url,
                                         const std::string& user, const std::string& prefix,
                                         const std::string& scratch);

}  // namespace leasehold::cli::doctor_detail
