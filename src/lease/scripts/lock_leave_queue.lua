-- A Lock's waiter gives up its place (queue.hpp).
-- KEYS[1] the queue, KEYS[2] the tickets, KEYS[3] the lock key. ARGV[1] the waiter's value,
-- ARGV[2] the lock's release channel.
-- Reply: 1 if the waiter was queued (it is not now), else 0.
-- A head that leaves a free lock tells the waiters behind it; a waiter among the first two that
-- leaves a held lock marks its key with the new first two (or unmarks it when nobody is left).
--! include notify_head.lua
--! include lock_holder.lua
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local left = redis.call('ZREM', KEYS[1], ARGV[1])
if rank and rank < 2 then
  local value = redis.pcall('GET', KEYS[3])
  if not value then
    if rank == 0 then
      local time = redis.call('TIME')
      local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
      notify_head(KEYS[1], KEYS[2], ARGV[2], now)
    end
  elseif type(value) == 'string' then
    mark_head(KEYS[3], value, KEYS[1])
  end
end
return left
