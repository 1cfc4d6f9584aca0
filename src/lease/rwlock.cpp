// The RwLock scripts. KEYS: [1] writer key (string: the writer's id, PX ttl), [2] readers key
// (sorted set: reader ids scored by the end of their lease, in server milliseconds), and for the
// acquires [3] the intent key (a waiting writer, PX intent ttl). Every script first reads the
// server's TIME and prunes readers whose lease ended: a crashed reader stops blocking writers when
// its lease ends. No script takes a time from the client: a call with extra arguments is refused.
#include "leasehold/rwlock.hpp"

namespace leasehold::detail {
namespace {

std::string with_prelude(int argument_count, const std::string& body) {
  return std::string(
             "if #ARGV ~= " + std::to_string(argument_count) +
             " then return redis.error_reply('ERR leasehold: this script takes " +
             std::to_string(argument_count) +
             " arguments; lease times come from the server, never from the client') end\n"
             "local clock = redis.call('TIME')\n"
             "local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)\n"
             "redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
             // The readers' set lives as long as its longest lease, never longer.
             "local function keep_readers_expiry()\n"
             "  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')\n"
             "  if last[2] then redis.call('PEXPIREAT', KEYS[2], last[2]) end\n"
             "end\n") +
         body;
}

// Lua: notify_turns(queue, tickets, channel) drops the waiters whose ticket ran out and publishes
// the ids of those whose turn it is: the writer at the head, or the readers before the first
// writer (up to 1000; the others find out at their recheck).
std::string_view notify_turns_lua() {
  return "local function notify_turns(queue, tickets, channel)\n"
         "  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)\n"
         "  for _, m in ipairs(dead) do redis.call('ZREM', queue, m) end\n"
         "  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end\n"
         "  local ids = {}\n"
         "  for _, m in ipairs(redis.call('ZRANGE', queue, 0, 999)) do\n"
         "    if string.sub(m, 1, 1) == 'w' then\n"
         "      if #ids == 0 then ids[1] = string.sub(m, 3) end\n"
         "      break\n"
         "    end\n"
         "    ids[#ids + 1] = string.sub(m, 3)\n"
         "  end\n"
         "  if #ids > 0 then redis.pcall('SPUBLISH', channel, table.concat(ids, ' ')) end\n"
         "end\n";
}

}  // namespace

// try_read: KEYS w, r, intent; ARGV id, ttl ms -> 1 reader lease granted (or already held by
// this id: a retry), 0 refused (a writer holds the name, or waits for it).
const Script& rw_try_read_script() {
  static const Script script(
      with_prelude(2,
                   "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
                   "local mine = redis.call('ZSCORE', KEYS[2], ARGV[1])\n"
                   "if not mine and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end\n"
                   "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])\n"
                   "keep_readers_expiry()\n"
                   "return 1\n"));
  return script;
}

// try_write: KEYS w, r, intent[, fence counter]; ARGV id, ttl ms, intent ttl ms (0: no writer
// preference) -> granted (or already held by this id: a retry): 1, or with a fence counter the
// writer's fencing number (>= 1; the counter grows by one per grant and never expires); 0
// refused (a writer or a live reader holds the name; with preference, the intent is registered
// or refreshed).
const Script& rw_try_write_script() {
  static const Script script(
      with_prelude(3,
                   "local holder = redis.call('GET', KEYS[1])\n"
                   "if holder == ARGV[1] then\n"
                   "  if KEYS[4] then return tonumber(redis.call('GET', KEYS[4]) or '0') end\n"
                   "  return 1\n"
                   "end\n"
                   "if not holder and redis.call('EXISTS', KEYS[2]) == 0 then\n"
                   "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                   "  redis.call('DEL', KEYS[3])\n"
                   "  if KEYS[4] then return redis.call('INCR', KEYS[4]) end\n"
                   "  return 1\n"
                   "end\n"
                   "if tonumber(ARGV[3]) > 0 then\n"
                   "  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[3])\n"
                   "end\n"
                   "return 0\n"));
  return script;
}

// write release: KEYS w, r, queue, tickets; ARGV id, channel -> 1 deleted (and the waiters whose
// turn it is told), 0 not held by this id.
const Script& rw_write_release_script() {
  static const Script script(
      with_prelude(2, std::string(notify_turns_lua()) +
                          "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
                          "redis.call('DEL', KEYS[1])\n"
                          "if redis.pcall('EXISTS', KEYS[3]) == 1 then\n"
                          "  notify_turns(KEYS[3], KEYS[4], ARGV[2])\n"
                          "end\n"
                          "return 1\n"));
  return script;
}

// write extend: KEYS w, r; ARGV id, ttl ms -> 1 TTL restarted, 0 not held by this id.
const Script& rw_write_extend_script() {
  static const Script script(with_prelude(2,
                                          "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                          "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                          "end\n"
                                          "return 0\n"));
  return script;
}

// read release: KEYS w, r, queue, tickets; ARGV id, channel -> 1 this reader's lease removed (and
// when it was the last, the waiters whose turn it is told), 0 it had ended.
const Script& rw_read_release_script() {
  static const Script script(with_prelude(
      2, std::string(notify_turns_lua()) + "local removed = redis.call('ZREM', KEYS[2], ARGV[1])\n"
                                           "keep_readers_expiry()\n"
                                           "if redis.call('EXISTS', KEYS[2]) == 0 and\n"
                                           "    redis.pcall('EXISTS', KEYS[3]) == 1 then\n"
                                           "  notify_turns(KEYS[3], KEYS[4], ARGV[2])\n"
                                           "end\n"
                                           "return removed\n"));
  return script;
}

Request rw_release_request(const LeaseState& state) {
  const WaitKeys waiting(state.key);
  const std::string_view keys[] = {state.key, state.second_key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {state.value, waiting.channel};
  return Request::script(state.kind->release(), keys, args);
}

// in turn: KEYS w, r, intent, queue, tickets[, fence counter]; ARGV kind ('r' or 'w'), id, ttl
// ms, ticket ttl ms -> {1, fence (1 when not fenced)} if this id holds the lease now (granted
// now, or already: a retry), else {0, ms until the blocker may be gone (the writer's lease, the
// readers' for a writer, a writer's intent for a reader; 0: free but others go first), this
// waiter's place (1: it goes next), the head's ticket ms left (0: this waiter is the head)}.
// Queue members are "<kind>:<id>"; a writer goes at the head of the queue, a reader when no
// writer is queued ahead of it. A writer at the head that must wait for readers sets its intent
// (PX ticket ttl), which keeps readers that do not queue out. With no queue, a free lock is
// granted without one.
const Script& rw_in_turn_script() {
  static const Script script(with_prelude(
      4,
      std::string(take_place_lua()) +
          "local writer = ARGV[1] == 'w'\n"
          "local member = ARGV[1] .. ':' .. ARGV[2]\n"
          "local fenced = KEYS[6] ~= nil\n"
          "local function granted(fence)\n"
          "  redis.call('ZREM', KEYS[4], member)\n"
          "  redis.call('ZREM', KEYS[5], member)\n"
          "  return {1, fence}\n"
          "end\n"
          "local function grant()\n"
          "  if writer then\n"
          "    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
          "    redis.call('DEL', KEYS[3])\n"
          "    if fenced then return granted(redis.call('INCR', KEYS[6])) end\n"
          "    return granted(1)\n"
          "  end\n"
          "  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])\n"
          "  keep_readers_expiry()\n"
          "  return granted(1)\n"
          "end\n"
          "if writer and redis.call('GET', KEYS[1]) == ARGV[2] then\n"
          "  if fenced then return granted(tonumber(redis.call('GET', KEYS[6]) or '0')) end\n"
          "  return granted(1)\n"
          "end\n"
          "if not writer and redis.call('ZSCORE', KEYS[2], ARGV[2]) then return granted(1) end\n"
          "local function free()\n"
          "  if redis.call('EXISTS', KEYS[1]) == 1 then return false end\n"
          "  if writer then return redis.call('EXISTS', KEYS[2]) == 0 end\n"
          "  return redis.call('EXISTS', KEYS[3]) == 0\n"
          "end\n"
          "if redis.call('EXISTS', KEYS[4]) == 0 and free() then return grant() end\n"
          "local ticket = tonumber(ARGV[4])\n"
          "take_place(KEYS[4], KEYS[5], member, now, ticket)\n"
          "local rank = redis.call('ZRANK', KEYS[4], member)\n"
          "local turn = rank == 0\n"
          "if not writer then\n"
          "  turn = true\n"
          "  if rank > 0 then\n"
          "    for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, rank - 1)) do\n"
          "      if string.sub(m, 1, 1) == 'w' then turn = false break end\n"
          "    end\n"
          "  end\n"
          "end\n"
          "if turn and free() then return grant() end\n"
          // The head writer keeps new readers out (its intent, as long as its place), so that
          // readers that do not queue cannot starve it.
          "if writer and turn then redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[4]) end\n"
          "redis.call('PEXPIRE', KEYS[4], 2 * ticket)\n"
          "redis.call('PEXPIRE', KEYS[5], 2 * ticket)\n"
          "local blocker = redis.call('PTTL', KEYS[1])\n"
          "if blocker == -2 then blocker = redis.call('PTTL', writer and KEYS[2] or KEYS[3]) end\n"
          "if blocker == -2 then blocker = 0 end\n"
          "local head = redis.call('ZRANGE', KEYS[4], 0, 0)[1]\n"
          "local head_ticket = 0\n"
          "if head ~= member then\n"
          "  head_ticket = tonumber(redis.call('ZSCORE', KEYS[5], head)) - now\n"
          "end\n"
          "local place = rank + 1\n"
          "if turn then place = 1 end\n"
          "return {0, blocker, place, head_ticket}\n"));
  return script;
}

// leave: KEYS w, r, intent, queue, tickets; ARGV member ("<kind>:<id>"), channel -> 1 if it was
// queued (it is not now), else 0. A writer's intent goes with it; a head that leaves a lock
// without a writer tells the waiters whose turn it is then.
const Script& rw_leave_queue_script() {
  static const Script script(
      with_prelude(2, std::string(notify_turns_lua()) +
                          "local head = redis.call('ZRANGE', KEYS[4], 0, 0)[1] == ARGV[1]\n"
                          "redis.call('ZREM', KEYS[5], ARGV[1])\n"
                          "local left = redis.call('ZREM', KEYS[4], ARGV[1])\n"
                          "if redis.call('GET', KEYS[3]) == string.sub(ARGV[1], 3) then\n"
                          "  redis.call('DEL', KEYS[3])\n"
                          "end\n"
                          "if head and redis.call('EXISTS', KEYS[1]) == 0 then\n"
                          "  notify_turns(KEYS[4], KEYS[5], ARGV[2])\n"
                          "end\n"
                          "return left\n"));
  return script;
}

// force release: KEYS w, r, intent, queue, tickets; ARGV channel -> the number of keys deleted
// of w, r and intent; the waiters whose turn it is then are told.
const Script& rw_force_release_script() {
  static const Script script(
      with_prelude(1, std::string(notify_turns_lua()) +
                          "local removed = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])\n"
                          "if redis.pcall('EXISTS', KEYS[4]) == 1 then\n"
                          "  notify_turns(KEYS[4], KEYS[5], ARGV[1])\n"
                          "end\n"
                          "return removed\n"));
  return script;
}

// read extend: KEYS w, r; ARGV id, ttl ms -> 1 this reader's lease restarted, 0 it had ended
// (an ended lease is never resurrected). Other readers' leases are untouched.
const Script& rw_read_extend_script() {
  static const Script script(
      with_prelude(2,
                   "if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end\n"
                   "redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1])\n"
                   "keep_readers_expiry()\n"
                   "return 1\n"));
  return script;
}

}  // namespace leasehold::detail
