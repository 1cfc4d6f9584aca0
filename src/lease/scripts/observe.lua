-- An observer's look at a lock-like name (a Lock's, an Election's; watch.hpp).
-- KEYS[1] the lease key, KEYS[2] the observed hash (observed.lua), KEYS[3] (optional) the term
-- or fence counter, KEYS[4] (elections) the proclaimed value's key. ARGV[1] the observer's id,
-- ARGV[2] its ticket's TTL in ms (the hash lives that long after the last observer's look or
-- renewal), ARGV[3] the name's change channel, ARGV[4] '1' to mark a held key observed (a kind
-- whose scripts announce their changes), '0' not to (a Lock's: its key's changes are tracked).
-- Reply: {the version of the state announced last, 1 if this observer is one of the lookers
-- (observers.lua) else 0, then the state: the lease value (nil: free), its PTTL, the term, the
-- proclaimed value (nil: none)}.
-- A held key is marked observed if asked (lock_holder.lua), so that its release announces; a
-- state that changed since it was last announced (an expiry, a key deleted or rewritten behind
-- the library's back) is announced now. The observer becomes a looker if fewer than two are.
--! include observed.lua
--! include observers.lua
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ticket = tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[2], 'v', '0', 's', '-')  -- no state has this signature: announced now
end
redis.call('PEXPIRE', KEYS[2], ticket)
local value = redis.call('GET', KEYS[1])
if value and ARGV[4] == '1' and not observed_mark(value) then
  redis.call('SET', KEYS[1], marked_value(holder_of(value), waiting_in_mark(value), true),
             'KEEPTTL')
end
local version = announce(KEYS[2], ARGV[3], KEYS[1], KEYS[3], KEYS[4])
local lookers = live_lookers(KEYS[2], now)
local looking = 0
for _, looker in ipairs(lookers) do
  if looker[1] == ARGV[1] then looker[2] = string.format('%.0f', now + ticket); looking = 1 end
end
if looking == 0 and #lookers < 2 then
  lookers[#lookers + 1] = {ARGV[1], string.format('%.0f', now + ticket)}
  looking = 1
end
set_lookers(KEYS[2], lookers)
local lease, ttl, term, proclaimed = observed_state(KEYS[1], KEYS[3], KEYS[4])
return {version, looking, lease or false, ttl or 0, term or 0, proclaimed or false}
