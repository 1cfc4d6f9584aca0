-- A Semaphore's try in turn for a permit.
-- KEYS[1] the holders' set, KEYS[2] the queue, KEYS[3] the tickets, KEYS[4] the count key,
-- KEYS[5] the fence counter and KEYS[6] the name's own counter of the per-name layout
-- (fenced semaphores only, fence_grant.lua). ARGV[1] the waiter's value, ARGV[2] the
-- permit's TTL in ms, ARGV[3] the ticket's TTL in ms, ARGV[4] the count of permits, ARGV[5] the
-- semaphore's release channel, ARGV[6] the grace in ms a waiter gets to take a free permit.
-- Reply: {1, fence (1 when not fenced)} if this waiter holds a permit now (granted now, or
-- already: a retry), else {0, ms until the lease whose end lets this waiter in ends (a crashed
-- holder tells no one; 0: a permit is free, but waiters ahead have yet to take theirs), this
-- waiter's place (1: the next to get a permit; behind waiters that have a free permit to take,
-- 2 for the first), the ticket ms left of the waiter ahead that may end first (0: this waiter
-- is the head)}.
-- The first (permits - holders) waiters of the queue get a permit; a grant that leaves a permit
-- free tells the next ones, so one release's message reaches as many waiters as there are free
-- permits. A waiter behind those that have a free permit to take cuts their tickets to the
-- grace: a waiter that died leaves the queue at the next try, a grace after the first waiter
-- behind it looked.
-- With no queue, a free permit is granted without one.
--! include permit_prelude.lua
--! include notify_head.lua
--! include take_place.lua
--! include fence_grant.lua
local fenced = KEYS[5] ~= nil
local permits = tonumber(ARGV[4])
local function granted(fence)
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {1, fence}
end
local function grant()
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('SET', KEYS[4], ARGV[4])
  keep_holders_expiry(KEYS[4])
  local fence = 1
  if fenced then fence = next_fence(KEYS[5], KEYS[6]) end
  return fence
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if fenced then return granted(current_fence(KEYS[5])) end
  return granted(1)
end
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[1]) < permits then
  return {1, grant()}
end
local ticket = tonumber(ARGV[3])
take_place(KEYS[2], KEYS[3], ARGV[1], now, ticket)
local rank = redis.call('ZRANK', KEYS[2], ARGV[1])
local free = permits - redis.call('ZCARD', KEYS[1])
if rank < free then
  local fence = grant()
  local result = granted(fence)
  if free > 1 then notify_head(KEYS[2], KEYS[3], ARGV[5], now) end
  return result
end
redis.call('PEXPIRE', KEYS[2], 2 * ticket)
redis.call('PEXPIRE', KEYS[3], 2 * ticket)
if free > 0 then
  local grace = tonumber(ARGV[6])
  local soonest = nil
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, free - 1)) do
    local left = tonumber(redis.call('ZSCORE', KEYS[3], id)) - now
    if left > grace then
      redis.call('ZADD', KEYS[3], 'XX', now + grace, id)
      left = grace
    end
    if not soonest or left < soonest then soonest = left end
  end
  return {0, 0, rank - free + 2, soonest}
end
-- The lease whose end lets this waiter in: the (holders - permits + rank)-th to end.
local index = redis.call('ZCARD', KEYS[1]) - permits + rank
local blocker = 0
if index >= 0 then
  local ending = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
  if ending[2] then blocker = tonumber(ending[2]) - now end
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local head_ticket = 0
if head ~= ARGV[1] then
  head_ticket = tonumber(redis.call('ZSCORE', KEYS[3], head)) - now
end
return {0, blocker, rank + 1, head_ticket}
