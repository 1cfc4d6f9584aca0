-- The release (ARGV[2] empty) or the extend of an RwLock writer's lease on several names
-- (lock_set.hpp).
-- KEYS[1..n] the writer keys, KEYS[n+1..2n] the readers' sets, KEYS[2n+1..3n] the queues,
-- KEYS[3n+1..4n] the tickets. ARGV[1] the lease's value, ARGV[2] the TTL in ms of an extend
-- ('' for a release), ARGV[3..n+2] each name's release channel.
-- Reply: 1 if this lease was the writer of every name, and is now released from all, or has its
-- TTL restarted on all; else 0: the lease had been lost, and the names it still held are
-- released (an extend that finds one name gone keeps no other). A released name tells its
-- waiters whose turn it is (rw_notify_turns.lua). An ended lease is never resurrected.
local n = #KEYS / 4
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
--! include rw_notify_turns.lua
local held = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then held = held + 1 end
end
if ARGV[2] ~= '' and held == n then
  for i = 1, n do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  return 1
end
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    if redis.pcall('EXISTS', KEYS[2 * n + i]) == 1 then
      notify_turns(KEYS[2 * n + i], KEYS[3 * n + i], ARGV[i + 2])
    end
  end
end
if ARGV[2] == '' and held == n then return 1 end
return 0
