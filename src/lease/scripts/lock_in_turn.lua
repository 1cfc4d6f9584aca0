-- A Lock's try in turn (queue.hpp).
-- KEYS[1] the lock key, KEYS[2] its queue, KEYS[3] its tickets, KEYS[4] its observed hash
-- (observed.lua), KEYS[5] its fence counter (fenced locks: the shared one; an Election's term key),
-- KEYS[6] a fenced Lock's own counter of the per-name layout (fence_grant.lua), or an Election's
-- value key. ARGV[1] the waiter's value (its lease's), ARGV[2] the lock's TTL in ms, ARGV[3]
-- the ticket's TTL in ms, ARGV[4] the grace in ms a head gets to take a free lock, ARGV[5] the
-- released channel, ARGV[6] the change channel of a kind that can be observed (an Election's;
-- none for a Lock, whose grants then look at no observers).
-- Reply: {1, fence} if this waiter holds the lock now (granted now, or already: a retry; fence 0
-- when not fenced), else {0, the holder's PTTL (0: free, another waiter is ahead), this waiter's
-- place (1: the head), the head's ticket ms left (0: this waiter is the head)}.
-- Waiters whose ticket ran out leave the queue. With no queue, a free lock is granted without
-- one. A held key, and a key granted to the head while others wait, is marked with the two
-- values at the head (lock_holder.lua), so that its release tells them. A waiter that finds the
-- lock free and the head yet to take it cuts the head's ticket to the grace: a head that died
-- then leaves the queue at the next try, a grace after the first waiter behind it looked.
-- A grant of an observed lock marks the key observed and announces its new holder.
--! include take_place.lua
--! include observed.lua
--! include fence_grant.lua
local fenced = KEYS[5] ~= nil
local own_counter = ARGV[6] == nil and KEYS[6] or nil
local function granted()
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  if fenced then return {1, current_fence(KEYS[5])} end
  return {1, 0}
end
-- Sets the key to this waiter's lease, marked with `waiting`, and counts a fence.
local function grant(waiting)
  local observed = ARGV[6] ~= nil and redis.call('EXISTS', KEYS[4]) == 1
  redis.call('SET', KEYS[1], marked_value(ARGV[1], waiting, observed), 'PX', ARGV[2])
  local fence = 0
  if own_counter then
    fence = next_fence(KEYS[5], own_counter)
  elseif fenced then
    fence = next_term(KEYS[5])
  end
  if observed then announce(KEYS[4], ARGV[6], KEYS[1], KEYS[5], KEYS[6]) end
  return fence
end
local value = redis.call('GET', KEYS[1])
if holder_of(value) == ARGV[1] then return granted() end
if not value and redis.call('EXISTS', KEYS[2]) == 0 then return {1, grant(nil)} end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ticket = tonumber(ARGV[3])
take_place(KEYS[2], KEYS[3], ARGV[1], now, ticket)
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local holder = redis.call('PTTL', KEYS[1])
if head == ARGV[1] and holder == -2 then
  local waiting = next_two(KEYS[2], 1)
  grant(waiting)
  -- The new first two are told that they are: they look when this holder's lease would run out
  -- (it may crash or stall and tell no one), not at their recheck.
  if waiting then redis.pcall('SPUBLISH', ARGV[5], waiting) end
  return granted()
end
if value then mark_head(KEYS[1], value, KEYS[2]) end
redis.call('PEXPIRE', KEYS[2], 2 * ticket)
redis.call('PEXPIRE', KEYS[3], 2 * ticket)
if holder == -2 then holder = 0 end
local place = redis.call('ZRANK', KEYS[2], ARGV[1]) + 1
local head_ticket = 0
if head ~= ARGV[1] then
  head_ticket = tonumber(redis.call('ZSCORE', KEYS[3], head)) - now
  local grace = tonumber(ARGV[4])
  if holder == 0 and head_ticket > grace then
    redis.call('ZADD', KEYS[3], 'XX', now + grace, head)
    head_ticket = grace
  end
end
return {0, holder, place, head_ticket}
