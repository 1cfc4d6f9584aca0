-- Who leads an Election's name (election.hpp).
-- KEYS[1] the leader key, KEYS[2] the term counter, KEYS[3] the value key.
-- Reply: nil if nobody leads, else {the leader's lease value, its PTTL in ms, the term (the
-- counter's value), the value it proclaimed in this term (nil if none)}.
--! include lock_holder.lua
local leader = holder_of(redis.call('GET', KEYS[1]))
if not leader then return nil end
local value = redis.call('GET', KEYS[3])
if value and string.sub(value, 1, 33) ~= string.sub(leader, 1, 32) .. ' ' then value = nil end
if value then value = string.sub(value, 34) else value = false end  -- false: a nil element
return {leader, redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0'), value}
