-- Fragment (after rw_prelude.lua and rw_notify_turns.lua). What a holder does to its lease, with
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the queue and KEYS[4] the tickets
-- (an extend uses only the first two). Each answers 1 done, 0 `value` holds no such lease.
-- release_writer(value, channel) deletes the writer key and tells the waiters whose turn it is;
-- release_reader(value, channel) removes the reader, and when it was the last tells them too;
-- extend_writer(value, ttl) and extend_reader(value, ttl) restart the lease for ttl ms (an ended
-- lease is never resurrected; other readers' leases are untouched).
local function release_writer(value, channel)
  if redis.call('GET', KEYS[1]) ~= value then return 0 end
  redis.call('DEL', KEYS[1])
  if redis.pcall('EXISTS', KEYS[3]) == 1 then
    notify_turns(KEYS[3], KEYS[4], channel)
  end
  return 1
end
local function release_reader(value, channel)
  local removed = redis.call('ZREM', KEYS[2], value)
  keep_readers_expiry()
  if redis.call('EXISTS', KEYS[2]) == 0 and
      redis.pcall('EXISTS', KEYS[3]) == 1 then
    notify_turns(KEYS[3], KEYS[4], channel)
  end
  return removed
end
local function extend_writer(value, ttl)
  if redis.call('GET', KEYS[1]) == value then
    return redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return 0
end
local function extend_reader(value, ttl)
  if not redis.call('ZSCORE', KEYS[2], value) then return 0 end
  redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ttl), value)
  keep_readers_expiry()
  return 1
end
