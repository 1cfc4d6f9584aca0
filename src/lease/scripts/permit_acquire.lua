-- A Semaphore's try for a permit.
-- KEYS[1] the holders' set, KEYS[2] the count key, KEYS[3] the fence counter and KEYS[4]
-- the name's own counter of the per-name layout (fenced semaphores only, fence_grant.lua).
-- ARGV[1] the permit's value, ARGV[2] its TTL in ms, ARGV[3] the count of permits.
-- Reply: granted (or already held by this value: a retry): 1, or with a fence counter the
-- permit's fencing number; 0 every permit is held. A grant stores its count (for status tools).
-- Holders beyond a lowered count keep their permits until they end, and no acquire is granted
-- while as many as its count hold one.
--! include permit_prelude.lua
--! include fence_grant.lua
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if KEYS[3] then return current_fence(KEYS[3]) end
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('SET', KEYS[2], ARGV[3])
keep_holders_expiry(KEYS[2])
if KEYS[3] then return next_fence(KEYS[3], KEYS[4]) end
return 1
