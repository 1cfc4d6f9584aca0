// The Semaphore scripts. KEYS[1] is the holders' sorted set (permit ids scored by the end of their
// lease, in server milliseconds). Every script first reads the server's TIME and prunes the
// permits whose lease ended: a crashed holder's permit comes back when its lease ends, never
// earlier. The count of permits comes with each acquire: holders beyond a lowered count keep
// their permits until they end, and no acquire is granted while as many as its count hold one.
#include "leasehold/semaphore.hpp"

namespace leasehold::detail {
namespace {

std::string with_prelude(const std::string& body) {
  return "local clock = redis.call('TIME')\n"
         "local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)\n"
         "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
         // The holders' set lives as long as its longest lease, never longer.
         // (And so does the count key, when given: the count the last grant used.)
         "local function keep_holders_expiry(count_key)\n"
         "  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
         "  if last[2] then\n"
         "    redis.call('PEXPIREAT', KEYS[1], last[2])\n"
         "    if count_key then redis.call('PEXPIREAT', count_key, last[2]) end\n"
         "  end\n"
         "end\n"
         // Drops the waiters whose place ran out; publishes the head's id.
         "local function notify_head(queue, tickets, channel)\n"
         "  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)\n"
         "  for _, id in ipairs(dead) do redis.call('ZREM', queue, id) end\n"
         "  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end\n"
         "  local head = redis.call('ZRANGE', queue, 0, 0)[1]\n"
         "  if head then redis.pcall('SPUBLISH', channel, head) end\n"
         "end\n" +
         body;
}

}  // namespace

// acquire: KEYS holders, count[, fence counter]; ARGV id, ttl ms, permits -> granted (or already
// held by this id: a retry): 1, or with a fence counter the permit's fencing number; 0 every
// permit is held. A grant stores its count (for status tools).
const Script& permit_acquire_script() {
  static const Script script(
      with_prelude("if redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
                   "  if KEYS[3] then return tonumber(redis.call('GET', KEYS[3]) or '0') end\n"
                   "  return 1\n"
                   "end\n"
                   "if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end\n"
                   "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
                   "redis.call('SET', KEYS[2], ARGV[3])\n"
                   "keep_holders_expiry(KEYS[2])\n"
                   "if KEYS[3] then return redis.call('INCR', KEYS[3]) end\n"
                   "return 1\n"));
  return script;
}

// release: KEYS holders, queue, tickets; ARGV id, channel -> 1 this permit removed (and the head
// of the queue told), 0 its lease had ended.
const Script& permit_release_script() {
  static const Script script(
      with_prelude("local removed = redis.call('ZREM', KEYS[1], ARGV[1])\n"
                   "keep_holders_expiry(nil)\n"
                   "if KEYS[2] and redis.pcall('EXISTS', KEYS[2]) == 1 then\n"
                   "  notify_head(KEYS[2], KEYS[3], ARGV[2])\n"
                   "end\n"
                   "return removed\n"));
  return script;
}

// extend: KEYS holders, count; ARGV id, ttl ms -> 1 this permit's lease restarted, 0 it had ended
// (an ended lease is never resurrected).
const Script& permit_extend_script() {
  static const Script script(
      with_prelude("if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n"
                   "redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])\n"
                   "keep_holders_expiry(KEYS[2])\n"
                   "return 1\n"));
  return script;
}

Request permit_release_request(const LeaseState& state) {
  const WaitKeys waiting(state.key);
  const std::string_view keys[] = {state.key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {state.value, waiting.channel};
  return Request::script(permit_release_script(), keys, args);
}

// in turn: KEYS holders, queue, tickets, count[, fence counter]; ARGV id, ttl ms, ticket ttl ms,
// permits, channel -> {1, fence (1 when not fenced)} if this id holds a permit now (granted now, or
// already: a retry), else {0, ms until the lease whose end lets this waiter in ends (its own
// blocker: a crashed holder tells no one), this waiter's place among
// those waiting for a permit (1: the next to get one), the head's ticket ms left (0: this waiter is
// the head)}. The first (permits - holders) waiters of the queue get a permit; a grant that leaves
// a permit free tells the next head, so one release's message reaches as many waiters as there are
// free permits. With no queue, a free permit is granted without one.
const Script& permit_in_turn_script() {
  static const Script script(with_prelude(
      std::string(take_place_lua()) +
      "local fenced = KEYS[5] ~= nil\n"
      "local permits = tonumber(ARGV[4])\n"
      "local function granted(fence)\n"
      "  redis.call('ZREM', KEYS[2], ARGV[1])\n"
      "  redis.call('ZREM', KEYS[3], ARGV[1])\n"
      "  return {1, fence}\n"
      "end\n"
      "local function grant()\n"
      "  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
      "  redis.call('SET', KEYS[4], ARGV[4])\n"
      "  keep_holders_expiry(KEYS[4])\n"
      "  local fence = 1\n"
      "  if fenced then fence = redis.call('INCR', KEYS[5]) end\n"
      "  return fence\n"
      "end\n"
      "if redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
      "  if fenced then return granted(tonumber(redis.call('GET', KEYS[5]) or '0')) end\n"
      "  return granted(1)\n"
      "end\n"
      "if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[1]) < permits then\n"
      "  return {1, grant()}\n"
      "end\n"
      "local ticket = tonumber(ARGV[3])\n"
      "take_place(KEYS[2], KEYS[3], ARGV[1], now, ticket)\n"
      "local rank = redis.call('ZRANK', KEYS[2], ARGV[1])\n"
      "local free = permits - redis.call('ZCARD', KEYS[1])\n"
      "if rank < free then\n"
      "  local fence = grant()\n"
      "  local result = granted(fence)\n"
      "  if free > 1 then notify_head(KEYS[2], KEYS[3], ARGV[5]) end\n"
      "  return result\n"
      "end\n"
      "redis.call('PEXPIRE', KEYS[2], 2 * ticket)\n"
      "redis.call('PEXPIRE', KEYS[3], 2 * ticket)\n"
      // The lease whose end lets this waiter in: the (holders - permits + rank)-th to end.
      "local index = redis.call('ZCARD', KEYS[1]) - permits + rank\n"
      "local blocker = 0\n"
      "if index >= 0 then\n"
      "  local ending = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')\n"
      "  if ending[2] then blocker = tonumber(ending[2]) - now end\n"
      "end\n"
      "local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]\n"
      "local head_ticket = 0\n"
      "if head ~= ARGV[1] then\n"
      "  head_ticket = tonumber(redis.call('ZSCORE', KEYS[3], head)) - now\n"
      "end\n"
      "local place = rank + 1\n"
      "if free > 0 then place = rank - free + 1 end\n"
      "return {0, blocker, place, head_ticket}\n"));
  return script;
}

// leave: KEYS holders, queue, tickets; ARGV id, channel -> 1 if the id was queued (it is not
// now), else 0. A head that leaves tells the waiter behind it (a permit may be free).
const Script& permit_leave_queue_script() {
  static const Script script(
      with_prelude("local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1]\n"
                   "redis.call('ZREM', KEYS[3], ARGV[1])\n"
                   "local left = redis.call('ZREM', KEYS[2], ARGV[1])\n"
                   "if head then notify_head(KEYS[2], KEYS[3], ARGV[2]) end\n"
                   "return left\n"));
  return script;
}

}  // namespace leasehold::detail
