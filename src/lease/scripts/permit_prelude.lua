-- Fragment. The start of every Semaphore script, whose KEYS[1] is the holders' set (permit values
-- scored by the end of their lease, in server ms): `now` from the server's TIME, and the permits
-- whose lease ended pruned, so that a crashed holder's permit comes back when its lease ends,
-- never earlier.
-- keep_holders_expiry(count_key) makes the set, and the count key when given (the count the last
-- grant used), live as long as the longest lease, never longer.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local function keep_holders_expiry(count_key)
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIREAT', KEYS[1], last[2])
    if count_key then redis.call('PEXPIREAT', count_key, last[2]) end
  end
end
