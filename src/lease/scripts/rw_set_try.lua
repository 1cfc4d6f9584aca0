-- An RwLock's try for the writer's lease of several names at once, as one lease (lock_set.hpp):
-- all of them or none.
-- KEYS[1..n] the writer keys, in the set's order, KEYS[n+1..2n] the readers' sets; a fenced
-- lock's then KEYS[2n+1..3n] the fence counter of each key and KEYS[3n+1..4n] each name's
-- own counter of the per-name layout (fence_grant.lua). ARGV[1] the lease's value, ARGV[2] its
-- TTL in ms, ARGV[3] n.
-- Reply: {1, fence of each name (0 when not fenced)} if the lease is the writer of every name
-- now, each with the whole TTL; {0, i} if the i-th name (1-based) has another writer or a live
-- reader: nothing was taken. A name whose writer is this lease already (taken in turn, or a
-- retry) counts as taken: its TTL restarts with the others', and it reports the counter's fence.
-- Like a single try, a free name is taken ahead of its queued waiters; readers whose lease ended
-- are pruned first.
--! include fence_grant.lua
--! include set_grant.lua
local n = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local held = {}
for i = 1, n do
  local writer = redis.call('GET', KEYS[i])
  if writer and writer ~= ARGV[1] then return {0, i} end
  redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', now)
  if redis.call('EXISTS', KEYS[n + i]) == 1 then return {0, i} end
  held[i] = writer ~= false
end
return grant_set(n, held, #KEYS == 4 * n and 2 * n or nil)
