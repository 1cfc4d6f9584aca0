-- A Lock's try for several names at once, as one lease (lock_set.hpp): all of them or none.
-- KEYS[1..n] the lock keys, in the set's order; a fenced lock's then KEYS[n+1..2n] the fence
-- counter of each key (a single server's one counter n times) and KEYS[2n+1..3n] each name's
-- own counter of the per-name layout (fence_grant.lua). ARGV[1] the lease's value, ARGV[2] its TTL in ms, ARGV[3] n.
-- Reply: {1, fence of each key (0 when not fenced)} if the lease holds every key now, each with
-- the whole TTL; {0, i} if the i-th key (1-based) is held by another lease: nothing was taken.
-- A key that holds this lease already (one the waiter took in turn, or a retry) counts as
-- taken: its TTL restarts with the others', its mark is kept, and it reports the counter's fence.
-- Like a single try, a free key is taken ahead of its queued waiters.
--! include lock_holder.lua
--! include fence_grant.lua
--! include set_grant.lua
local n = tonumber(ARGV[3])
local held = {}
for i = 1, n do
  local value = redis.call('GET', KEYS[i])
  if value and holder_of(value) ~= ARGV[1] then return {0, i} end
  held[i] = value ~= false
end
return grant_set(n, held, #KEYS == 3 * n and n or nil)
