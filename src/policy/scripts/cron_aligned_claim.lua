-- A cron job's claim of the current interval, aligned to the server's clock.
-- KEYS[1] the slot's lease key, KEYS[2] the high-water mark. ARGV[1] the lease's value, ARGV[2]
-- the interval in ms, ARGV[3] the TTL in ms of both keys.
-- Reply: {1, slot} granted (or already granted to this value: a retry), {0, slot} refused.
-- The slot comes from the server's TIME; it is granted only above the highest slot claimed, or
-- when it is that slot and its lease was given back (deleted). Either key holding another type
-- of value is refused (WRONGTYPE), never overwritten.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local slot = math.floor(now / tonumber(ARGV[2]))
local holder = redis.call('GET', KEYS[1])
local high = tonumber(redis.call('GET', KEYS[2]))
if high and slot < high then return {0, slot} end
if high == slot then
  if holder == ARGV[1] then return {1, slot} end
  if holder then return {0, slot} end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SET', KEYS[2], string.format('%d', slot), 'PX', ARGV[3])
return {1, slot}
