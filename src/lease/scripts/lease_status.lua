-- Reads a name's leases and what surrounds them, for status tools (describe.hpp). Reads only.
-- ARGV[1] the mode: one letter per key, in the order of KEYS. 's' a string key holding one lease,
-- 'z' a sorted set of leases scored by their end in server ms, 'q' the queue of waiters (a sorted
-- set), 'f' a fence counter (the shared one, then the name's own: the larger counts), 'n' a
-- Semaphore's count of permits at its last grant.
-- Reply: {server ms now, the string key's value ('' if none), its PTTL (-2 if none), the number
-- of queued waiters, the fence counter (-1 if none), the count of permits (-1 if none), then
-- each live member of the set and its score}.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local reply = {now, '', -2, 0, -1, -1}
local function counter(key)
  local value = redis.call('GET', key)
  return value and tonumber(value) or -1
end
local set
for i = 1, #ARGV[1] do
  local letter, key = string.sub(ARGV[1], i, i), KEYS[i]
  if letter == 's' then
    reply[2] = redis.call('GET', key) or ''
    reply[3] = redis.call('PTTL', key)
  elseif letter == 'z' then
    set = key
  elseif letter == 'q' then
    reply[4] = redis.call('ZCARD', key)
  elseif letter == 'f' then
    reply[5] = math.max(reply[5], counter(key))
  elseif letter == 'n' then
    reply[6] = counter(key)
  end
end
if set then
  local members = redis.call('ZRANGEBYSCORE', set, '(' .. now, '+inf', 'WITHSCORES')
  for _, field in ipairs(members) do reply[#reply + 1] = field end
end
return reply
