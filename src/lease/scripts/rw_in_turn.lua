-- An RwLock's try in turn, for a reader's or the writer's lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the intent key, KEYS[4] the queue,
-- KEYS[5] the tickets, KEYS[6] the fence counter and KEYS[7] the name's own counter of the
-- per-name layout (fenced writers only, fence_grant.lua). ARGV[1] the kind ('r' or
-- 'w'), ARGV[2] the waiter's value, ARGV[3] the lease's TTL in ms, ARGV[4] the ticket's TTL in
-- ms, ARGV[5] the grace in ms a head gets to take its turn, ARGV[6] the lock's release channel.
-- Reply: {1, fence (1 when not fenced)} if this waiter holds the lease now (granted now, or
-- already: a retry), else {0, ms until the blocker may be gone (the writer's lease, the readers'
-- for a writer, a writer's intent for a reader; 0: free but others go first), this waiter's
-- place in the queue (1: the head), the head's ticket ms left (0: this waiter is the head)}.
-- Queue members are "<kind>:<value>"; a writer goes at the head of the queue, a reader when no
-- writer is queued ahead of it. A writer at the head that must wait for readers sets its intent
-- (PX the ticket's TTL), which keeps readers that do not queue out; a writer whose ticket runs
-- out takes its intent with it. With no queue, a free lock is granted without one.
-- The first reader to take a lock without readers tells the readers queued behind it (their turn
-- came with it: a writer that crashed told no one). A waiter that finds the head's turn free and
-- the head yet to take it cuts the head's ticket to the grace: a head that died then leaves the
-- queue at the next try, a grace after the first waiter behind it looked.
--! include rw_arguments.lua
if #ARGV ~= 6 then return wrong_arguments(6) end
--! include rw_prelude.lua
--! include take_place.lua
--! include rw_notify_turns.lua
--! include fence_grant.lua
local writer = ARGV[1] == 'w'
local member = ARGV[1] .. ':' .. ARGV[2]
local fenced = KEYS[6] ~= nil
local function granted(fence)
  redis.call('ZREM', KEYS[4], member)
  redis.call('ZREM', KEYS[5], member)
  return {1, fence}
end
local function grant()
  if writer then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    redis.call('DEL', KEYS[3])
    if fenced then return granted(next_fence(KEYS[6], KEYS[7])) end
    return granted(1)
  end
  local first_reader = redis.call('EXISTS', KEYS[2]) == 0
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
  keep_readers_expiry()
  local result = granted(1)
  if first_reader then
    local next = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
    if next and string.sub(next, 1, 1) == 'r' then notify_turns(KEYS[4], KEYS[5], ARGV[6]) end
  end
  return result
end
if writer and redis.call('GET', KEYS[1]) == ARGV[2] then
  if fenced then return granted(current_fence(KEYS[6])) end
  return granted(1)
end
if not writer and redis.call('ZSCORE', KEYS[2], ARGV[2]) then return granted(1) end
local function free()
  if redis.call('EXISTS', KEYS[1]) == 1 then return false end
  if writer then return redis.call('EXISTS', KEYS[2]) == 0 end
  return redis.call('EXISTS', KEYS[3]) == 0
end
-- Whether the head of the queue (`head`, a member) could take its lease now.
local function head_free(head)
  if redis.call('EXISTS', KEYS[1]) == 1 then return false end
  if string.sub(head, 1, 1) == 'w' then return redis.call('EXISTS', KEYS[2]) == 0 end
  local intent = redis.call('GET', KEYS[3])
  return not intent or 'w:' .. intent == head
end
if redis.call('EXISTS', KEYS[4]) == 0 and free() then return grant() end
local ticket = tonumber(ARGV[4])
local left = take_place(KEYS[4], KEYS[5], member, now, ticket)
if #left > 0 then
  -- A writer whose ticket ran out takes its intent with it.
  local intent = redis.call('GET', KEYS[3])
  for _, m in ipairs(left) do
    if intent and m == 'w:' .. intent then redis.call('DEL', KEYS[3]) end
  end
end
local rank = redis.call('ZRANK', KEYS[4], member)
local turn = rank == 0
if not writer then
  turn = true
  if rank > 0 then
    for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, rank - 1)) do
      if string.sub(m, 1, 1) == 'w' then turn = false break end
    end
  end
end
if turn and free() then return grant() end
-- The head writer keeps new readers out (its intent, as long as its place), so that readers that
-- do not queue cannot starve it.
if writer and turn then redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[4]) end
redis.call('PEXPIRE', KEYS[4], 2 * ticket)
redis.call('PEXPIRE', KEYS[5], 2 * ticket)
local blocker = redis.call('PTTL', KEYS[1])
if blocker == -2 then blocker = redis.call('PTTL', writer and KEYS[2] or KEYS[3]) end
if blocker == -2 then blocker = 0 end
local head = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
local head_ticket = 0
if head ~= member then
  head_ticket = tonumber(redis.call('ZSCORE', KEYS[5], head)) - now
  local grace = tonumber(ARGV[5])
  if head_ticket > grace and head_free(head) then
    redis.call('ZADD', KEYS[5], 'XX', now + grace, head)
    head_ticket = grace
  end
end
return {0, blocker, rank + 1, head_ticket}
