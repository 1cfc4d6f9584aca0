-- Fragment. The start of every RwLock script, whose KEYS[2] is the readers' set (reader values
-- scored by the end of their lease, in server ms): `now` from the server's TIME, and the readers
-- whose lease ended pruned, so that a crashed reader stops blocking writers when its lease ends.
-- keep_readers_expiry() makes the set live as long as its longest lease, never longer.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local function keep_readers_expiry()
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', KEYS[2], last[2]) end
end
