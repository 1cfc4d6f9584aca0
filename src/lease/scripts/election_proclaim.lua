-- An Election's leader publishes a value for its term (election.hpp).
-- KEYS[1] the leader key, KEYS[2] the value key, KEYS[3] the term counter, KEYS[4] the observed
-- hash (observed.lua). ARGV[1] the leader's lease value, ARGV[2] the value, ARGV[3] the
-- election's change channel.
-- Reply: 1 if that lease leads (the value key now holds "<its id's 32 hex digits> <value>", and
-- the observers were told), 0 if it does not (nothing changed).
-- The value key outlives the term; election_leader.lua shows it only while its lease leads.
--! include observed.lua
if holder_of(redis.call('GET', KEYS[1])) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], string.sub(ARGV[1], 1, 32) .. ' ' .. ARGV[2])
announce(KEYS[4], ARGV[3], KEYS[1], KEYS[3], KEYS[2])
return 1
