-- Reads a name's leases, for status tools (describe.hpp). Reads only.
-- KEYS: a string key of one lease (when the mode has 's'), then a sorted set of leases scored by
-- their end in server ms (when the mode has 'z'). ARGV[1] the mode.
-- Reply: {server ms now, the string key's value ('' if none), its PTTL, then each live member of
-- the set and its score}.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local reply = {now, '', -2}
local set = 1
if string.find(ARGV[1], 's', 1, true) then
  reply[2] = redis.call('GET', KEYS[1]) or ''
  reply[3] = redis.call('PTTL', KEYS[1])
  set = 2
end
if string.find(ARGV[1], 'z', 1, true) then
  local members = redis.call('ZRANGEBYSCORE', KEYS[set], '(' .. now, '+inf', 'WITHSCORES')
  for _, field in ipairs(members) do reply[#reply + 1] = field end
end
return reply
