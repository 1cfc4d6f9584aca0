-- Fragment. A name's observers (watch.hpp) keep a hash in the slot of its key, "observed": `v`
-- the version of the state last announced (it only grows: at least the server's time in µs),
-- `s` that state's signature. While the hash exists, every script that changes the name's state
-- announces the new state on the name's change channel, and so does an observer's look that
-- finds a change nobody announced (an expiry, a key deleted behind the library's back).
-- observed_state(key, counter, value_key) is the name's state: nil when no lease holds it, else
-- the lease's value (up to its mark), its PTTL, the term (the counter's value; 0 without one)
-- and the value it proclaimed (value_key holds "<id's 32 hex digits> <value>"; nil if it names
-- another lease, or without a value key).
-- announce(observed, channel, key, counter, value_key) publishes the state if the name is
-- observed and the state differs from the one last announced: "<version>" when no lease holds
-- the name, else "<version> <PTTL> <term> <lease value>", then "\n<proclaimed value>" if any.
-- Returns the version last announced, or nil when nobody observes the name.
--! include lock_holder.lua
local function observed_state(key, counter, value_key)
  local lease = holder_of(redis.call('GET', key))
  if not lease then return nil end
  local term = 0
  if counter then term = tonumber(redis.call('GET', counter) or '0') end
  local proclaimed = nil
  if value_key then
    local stored = redis.call('GET', value_key)
    if stored and string.sub(stored, 1, 33) == string.sub(lease, 1, 32) .. ' ' then
      proclaimed = string.sub(stored, 34)
    end
  end
  return lease, redis.call('PTTL', key), term, proclaimed
end
local function announce(observed, channel, key, counter, value_key)
  -- pcall: an announcement never fails the change it follows (a user whose ACL refuses the
  -- hash's commands still takes, releases and proclaims; its observers learn at a look).
  local last = redis.pcall('HMGET', observed, 'v', 's')
  if type(last) ~= 'table' or last.err or not last[1] then return nil end
  local lease, ttl, term, proclaimed = observed_state(key, counter, value_key)
  local signature = ''
  if lease then
    signature = string.format('%d', term) .. ' ' .. lease
    if proclaimed then signature = signature .. '\n' .. proclaimed end
  end
  if signature == last[2] then return last[1] end
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
  local version = string.format('%.0f', math.max(tonumber(last[1]) + 1, now))
  if type(redis.pcall('HSET', observed, 'v', version, 's', signature)) == 'table' then
    return nil  -- refused: not announced (a look will)
  end
  local message = version
  if lease then message = version .. ' ' .. ttl .. ' ' .. signature end
  redis.pcall('SPUBLISH', channel, message)
  return version
end
