-- SET key value NX PX ttl GET, for servers older than Redis 7.0 (which refuse NX with GET): the
-- same effect and the same reply, in one round trip.
-- KEYS[1] the key. ARGV[1] the value. ARGV[2] the TTL in ms.
-- Reply: the value the key held (then it was left as it was), or nil (it was set to ARGV[1] for
-- ARGV[2] ms). A key of another type is a WRONGTYPE error, as SET's.
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
