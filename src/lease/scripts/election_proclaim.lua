-- An Election's leader publishes a value for its term (election.hpp).
-- KEYS[1] the leader key, KEYS[2] the value key. ARGV[1] the leader's lease value, ARGV[2] the
-- value.
-- Reply: 1 if that lease leads (the value key now holds "<its id's 32 hex digits> <value>"),
-- 0 if it does not (nothing changed).
-- The value key outlives the term; election_leader.lua shows it only while its lease leads.
--! include lock_holder.lua
if holder_of(redis.call('GET', KEYS[1])) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], string.sub(ARGV[1], 1, 32) .. ' ' .. ARGV[2])
return 1
