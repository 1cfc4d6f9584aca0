-- An RwLock's try for the writer's lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the intent key, KEYS[4] the
-- fence counter and KEYS[5] the name's own counter of the per-name layout (fenced locks only,
-- fence_grant.lua). ARGV[1] the writer's value, ARGV[2] its TTL in ms, ARGV[3] the
-- intent's TTL in ms (0: no writer preference).
-- Reply: granted (or already held: a retry): 1, or with a fence counter the writer's fencing
-- number (>= 1; the counter grows by one per grant and never expires); 0 refused (a writer or a
-- live reader holds the name; with preference, the intent is registered or refreshed).
--! include rw_arguments.lua
if #ARGV ~= 3 then return wrong_arguments(3) end
--! include rw_prelude.lua
--! include fence_grant.lua
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  if KEYS[4] then return current_fence(KEYS[4]) end
  return 1
end
if not holder and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('DEL', KEYS[3])
  if KEYS[4] then return next_fence(KEYS[4], KEYS[5]) end
  return 1
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[3])
end
return 0
