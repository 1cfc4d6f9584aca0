-- An RwLock's try for a reader's lease.
-- KEYS[1] the writer key (its value, PX its TTL), KEYS[2] the readers' set, KEYS[3] the intent
-- key (a waiting writer's value, PX the intent's TTL). ARGV[1] the reader's value, ARGV[2] its
-- TTL in ms.
-- Reply: 1 the reader's lease is granted (or already held: a retry), 0 refused (a writer holds
-- the name, or waits for it).
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local mine = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not mine and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
keep_readers_expiry()
return 1
