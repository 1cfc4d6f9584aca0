-- An RwLock's waiter gives up its place.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the intent key, KEYS[4] the queue,
-- KEYS[5] the tickets. ARGV[1] the member ("<kind>:<value>"), ARGV[2] the lock's release
-- channel.
-- Reply: 1 if it was queued (it is not now), else 0.
-- A writer's intent goes with it; a head that leaves a lock without a writer tells the waiters
-- whose turn it is then.
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
local head = redis.call('ZRANGE', KEYS[4], 0, 0)[1] == ARGV[1]
redis.call('ZREM', KEYS[5], ARGV[1])
local left = redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[3]) == string.sub(ARGV[1], 3) then
  redis.call('DEL', KEYS[3])
end
if head and redis.call('EXISTS', KEYS[1]) == 0 then
  notify_turns(KEYS[4], KEYS[5], ARGV[2])
end
return left
