// The minimal ACL of docs/locks.md for waiting in turn under the default prefix, as an
// ACL SETUSER command, for the tests that run as exactly that user.
#pragma once

#include <string>
#include <vector>

namespace leasehold::testing {

inline std::vector<std::string> waiting_acl_setuser(const std::string& user,
                                                    const std::string& password) {
  std::vector<std::string> command = {"ACL",          "SETUSER",   user,           "on",
                                      ">" + password, "resetkeys", "~leasehold:*", "resetchannels",
                                      "&leasehold:*", "-@all"};
  for (const char* allowed : {"+set",
                              "+get",
                              "+del",
                              "+pexpire",
                              "+eval",
                              "+evalsha",
                              "+ping",
                              "+client|setname",
                              "+exists",
                              "+time",
                              "+pttl",
                              "+incr",
                              "+zadd",
                              "+zrem",
                              "+zrange",
                              "+zrangebyscore",
                              "+zremrangebyscore",
                              "+zscore",
                              "+zrank",
                              "+spublish",
                              "+ssubscribe",
                              "+sunsubscribe"})
    command.push_back(allowed);
  return command;
}

}  // namespace leasehold::testing
