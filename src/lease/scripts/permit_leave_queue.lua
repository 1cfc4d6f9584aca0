-- A Semaphore's waiter gives up its place.
-- KEYS[1] the holders' set, KEYS[2] the queue, KEYS[3] the tickets. ARGV[1] the waiter's value,
-- ARGV[2] the semaphore's release channel.
-- Reply: 1 if it was queued (it is not now), else 0. A head that leaves tells the waiter behind
-- it (a permit may be free).
--! include permit_prelude.lua
--! include notify_head.lua
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1]
redis.call('ZREM', KEYS[3], ARGV[1])
local left = redis.call('ZREM', KEYS[2], ARGV[1])
if head then notify_head(KEYS[2], KEYS[3], ARGV[2], now) end
return left
