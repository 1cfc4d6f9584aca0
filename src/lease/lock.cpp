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

// KEYS[1] lock key, KEYS[2] fence counter, ARGV[1] lease id, ARGV[2] ttl in ms -> the fencing
// number (>= 1) if this id holds the lock now (taken now, or already: a retry), 0 if another id
// holds it. The counter never expires; it grows by one per grant.
const Script& lock_try_fenced_script() {
  static const Script script(
      "local holder = redis.call('GET', KEYS[1])\n"
      "if holder == ARGV[1] then return tonumber(redis.call('GET', KEYS[2]) or '0') end\n"
      "if holder then return 0 end\n"
      "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
      "return redis.call('INCR', KEYS[2])\n");
  return script;
}

Request lease_request(const LeaseState& state, bool extend) {
  const LeaseKind& kind = state.kind != nullptr ? *state.kind : kLockLease;
  const DecimalDigits ttl(extend ? state.ttl.count() : 0);  // a release sends no TTL
  const std::string_view args[] = {state.id_hex(), ttl.view()};
  const std::string_view keys[] = {state.key, state.second_key};
  const std::span<const std::string_view> used_keys(keys, state.second_key.empty() ? 1 : 2);
  if (extend)
    return Request::script(kind.extend(), used_keys, args).grants_lease();
  return Request::script(kind.release(), used_keys, std::span(args, 1));
}

}  // namespace leasehold::detail
