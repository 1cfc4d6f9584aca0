#include "leasehold/lock.hpp"

namespace leasehold::detail {

// KEYS[1] lock key, ARGV[1] lease id -> 1 if the key held this id and was deleted, else 0.
const Script& lock_release_script() {
  static const Script script(
      "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
      "  return redis.call('DEL', KEYS[1])\n"
      "end\n"
      "return 0\n");
  return script;
}

// KEYS[1] lock key, ARGV[1] lease id, ARGV[2] ttl in ms -> 1 if the key held this id and its TTL
// restarted, else 0. A missing key stays missing: extend never resurrects a lease.
const Script& lock_extend_script() {
  static const Script script(
      "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
      "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
      "end\n"
      "return 0\n");
  return script;
}

}  // namespace leasehold::detail
