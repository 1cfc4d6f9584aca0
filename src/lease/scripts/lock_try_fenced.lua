-- A fenced Lock's try: takes a free lock and a fencing number.
-- KEYS[1] the lock key, KEYS[2] its fence counter, KEYS[3] the name's own counter of the
-- per-name layout (fence_grant.lua). ARGV[1] the lease's value, ARGV[2] its TTL in ms.
-- Reply: the fencing number (>= 1) if this lease holds the lock now (taken now, or already: a
-- retry), 0 if another holds it. The counter never expires; it grows by one per grant.
--! include lock_holder.lua
--! include fence_grant.lua
local holder = redis.call('GET', KEYS[1])
if holder_of(holder) == ARGV[1] then return current_fence(KEYS[2]) end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return next_fence(KEYS[2], KEYS[3])
