-- Frees a Semaphore's name whoever holds its permits (an operator's release).
-- KEYS[1] the holders' set, KEYS[2] the count key, KEYS[3] the queue, KEYS[4] the tickets.
-- ARGV[1] the semaphore's release channel.
-- Reply: how many of the holders' set and the count key it deleted (a set whose every lease had
-- ended is pruned first and not counted); the head of the queue is told.
--! include permit_prelude.lua
--! include notify_head.lua
local removed = redis.call('DEL', KEYS[1], KEYS[2])
if redis.pcall('EXISTS', KEYS[3]) == 1 then
  notify_head(KEYS[3], KEYS[4], ARGV[1], now)
end
return removed
