-- The extend of a Semaphore's permit.
-- KEYS[1] the holders' set, KEYS[2] the count key. ARGV[1] the permit's value, ARGV[2] its TTL
-- in ms.
-- Reply: 1 this permit's lease restarted, 0 it had ended (an ended lease is never resurrected).
--! include permit_prelude.lua
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
keep_holders_expiry(KEYS[2])
return 1
