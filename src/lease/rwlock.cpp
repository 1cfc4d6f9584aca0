// The RwLock scripts. KEYS: [1] writer key (string: the writer's id, PX ttl), [2] readers key
// (sorted set: reader ids scored by the end of their lease, in server milliseconds), and for the
// acquires [3] the intent key (a waiting writer, PX intent ttl). Every script first reads the
// server's TIME and prunes readers whose lease ended: a crashed reader stops blocking writers when
// its lease ends. No script takes a time from the client: a call with extra arguments is refused.
#include "leasehold/rwlock.hpp"

namespace leasehold::detail {
namespace {

std::string with_prelude(int argument_count, const char* body) {
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

// write release: KEYS w, r; ARGV id -> 1 deleted, 0 not held by this id.
const Script& rw_write_release_script() {
  static const Script script(with_prelude(1,
                                          "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                          "  return redis.call('DEL', KEYS[1])\n"
                                          "end\n"
                                          "return 0\n"));
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

// read release: KEYS w, r; ARGV id -> 1 this reader's lease removed, 0 it had ended.
const Script& rw_read_release_script() {
  static const Script script(with_prelude(1,
                                          "local removed = redis.call('ZREM', KEYS[2], ARGV[1])\n"
                                          "keep_readers_expiry()\n"
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
