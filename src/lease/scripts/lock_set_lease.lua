-- The release (ARGV[2] empty) or the extend of a Lock's lease on several names (lock_set.hpp).
-- KEYS[1..n] the lock keys. ARGV[1] the lease's value, ARGV[2] the TTL in ms of an extend ('' for
-- a release), ARGV[3..n+2] each key's release channel.
-- Reply: 1 if every key held this lease, and is now released, or has its TTL restarted; else 0:
-- the lease had been lost, and the keys that still held it are released (an extend that finds
-- one name gone keeps no other). A released key marked with waiters (lock_holder.lua) tells them
-- on its channel, as a single release does. An ended lease is never resurrected.
--! include lock_holder.lua
local values = {}
local held = 0
for i = 1, #KEYS do
  values[i] = redis.call('GET', KEYS[i])
  if values[i] and holder_of(values[i]) == ARGV[1] then held = held + 1 end
end
if ARGV[2] ~= '' and held == #KEYS then
  for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  return 1
end
for i = 1, #KEYS do
  if values[i] and holder_of(values[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    local waiting = waiting_in_mark(values[i])
    if waiting then redis.pcall('SPUBLISH', ARGV[i + 2], waiting) end
  end
end
if ARGV[2] == '' and held == #KEYS then return 1 end
return 0
