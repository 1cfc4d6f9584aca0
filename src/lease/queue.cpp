#include "leasehold/queue.hpp"

namespace leasehold::detail {

// KEYS[1] lock key, KEYS[2] queue, KEYS[3] tickets, KEYS[4] fence counter (fenced locks only);
// ARGV[1] waiter id, ARGV[2] lock ttl in ms, ARGV[3] ticket ttl in ms -> {1, fence} if this id
// holds the lock now (granted now, or already: a retry; fence 0 when not fenced), else
// {0, the holder's PTTL (0: free, another waiter is ahead), this id's place (1: the head), the
// head's ticket ms left (0: this id is the head)}. Waiters whose ticket ran out leave the queue.
// With no queue, a free lock is granted without one. A held key, and a key granted to the head
// while others wait, is marked with the id at the head (see lock_holder_lua()), so that its
// release tells that waiter.
const Script& lock_in_turn_script() {
  static const Script script(
      std::string(take_place_lua()) + std::string(lock_holder_lua()) +
      "local fenced = KEYS[4] ~= nil\n"
      "local function granted()\n"
      "  redis.call('ZREM', KEYS[2], ARGV[1])\n"
      "  redis.call('ZREM', KEYS[3], ARGV[1])\n"
      "  if fenced then return {1, tonumber(redis.call('GET', KEYS[4]) or '0')} end\n"
      "  return {1, 0}\n"
      "end\n"
      "local value = redis.call('GET', KEYS[1])\n"
      "if holder_of(value) == ARGV[1] then return granted() end\n"
      "if not value and redis.call('EXISTS', KEYS[2]) == 0 then\n"
      "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
      "  if fenced then return {1, redis.call('INCR', KEYS[4])} end\n"
      "  return {1, 0}\n"
      "end\n"
      "local time = redis.call('TIME')\n"
      "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
      "local ticket = tonumber(ARGV[3])\n"
      "take_place(KEYS[2], KEYS[3], ARGV[1], now, ticket)\n"
      "local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]\n"
      "local holder = redis.call('PTTL', KEYS[1])\n"
      "if head == ARGV[1] and holder == -2 then\n"
      "  local second = redis.call('ZRANGE', KEYS[2], 1, 1)[1]\n"
      "  local granted_value = ARGV[1]\n"
      "  if second then granted_value = ARGV[1] .. ':' .. second end\n"
      "  redis.call('SET', KEYS[1], granted_value, 'PX', ARGV[2])\n"
      "  if fenced then redis.call('INCR', KEYS[4]) end\n"
      "  return granted()\n"
      "end\n"
      "if value then mark_head(KEYS[1], value, head) end\n"
      "redis.call('PEXPIRE', KEYS[2], 2 * ticket)\n"
      "redis.call('PEXPIRE', KEYS[3], 2 * ticket)\n"
      "if holder == -2 then holder = 0 end\n"
      "local head_ticket = 0\n"
      "if head ~= ARGV[1] then\n"
      "  head_ticket = tonumber(redis.call('ZSCORE', KEYS[3], head)) - now\n"
      "end\n"
      "return {0, holder, redis.call('ZRANK', KEYS[2], ARGV[1]) + 1, head_ticket}\n");
  return script;
}

// KEYS[1] queue, KEYS[2] tickets, KEYS[3] lock key, ARGV[1] waiter id, ARGV[2] the lock's
// release channel -> 1 if the id was queued (it is not now), else 0. A head that leaves a free
// lock tells the waiter behind it; one that leaves a held lock marks its key with the new head
// (or unmarks it when nobody is left).
const Script& leave_queue_script() {
  static const Script script(
      std::string(notify_head_lua()) + std::string(lock_holder_lua()) +
      "local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1] == ARGV[1]\n"
      "redis.call('ZREM', KEYS[2], ARGV[1])\n"
      "local left = redis.call('ZREM', KEYS[1], ARGV[1])\n"
      "if head then\n"
      "  local value = redis.pcall('GET', KEYS[3])\n"
      "  if not value then\n"
      "    notify_head(KEYS[1], KEYS[2], ARGV[2])\n"
      "  elseif type(value) == 'string' then\n"
      "    mark_head(KEYS[3], value, redis.call('ZRANGE', KEYS[1], 0, 0)[1])\n"
      "  end\n"
      "end\n"
      "return left\n");
  return script;
}

Result<std::vector<long long>> turn_fields(const Reply& reply) {
  if (reply.is_error())
    return error_result<std::vector<long long>>(reply);
  const bool well_formed = reply.type == Reply::Type::array &&
                           (reply.elements.size() == 2 || reply.elements.size() == 4);
  std::vector<long long> fields;
  for (std::size_t i = 0; well_formed && i < reply.elements.size(); ++i) {
    if (reply.elements[i].type != Reply::Type::integer)
      break;
    fields.push_back(reply.elements[i].integer);
  }
  if (!well_formed || fields.size() != reply.elements.size() ||
      (fields[0] == 0) != (fields.size() == 4))
    return Result<std::vector<long long>>(
        make_error_code(errc::unexpected_reply),
        "an unexpected reply to a try in turn: " + to_string(reply));
  return fields;
}

}  // namespace leasehold::detail
