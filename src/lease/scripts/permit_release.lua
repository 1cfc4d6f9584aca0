-- The release of a Semaphore's permit.
-- KEYS[1] the holders' set, KEYS[2] the queue, KEYS[3] the tickets. ARGV[1] the permit's value,
-- ARGV[2] the semaphore's release channel.
-- Reply: 1 this permit removed (and the head of the queue told), 0 its lease had ended.
--! include permit_prelude.lua
--! include notify_head.lua
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
keep_holders_expiry(nil)
if KEYS[2] and redis.pcall('EXISTS', KEYS[2]) == 1 then
  notify_head(KEYS[2], KEYS[3], ARGV[2], now)
end
return removed
