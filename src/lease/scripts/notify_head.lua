-- Fragment. notify_head(queue, tickets, channel, now) drops the waiters whose ticket ran out (at
-- `now`, server ms) and publishes the ids of the first two, if any, space-separated, on the
-- channel (sharded pub/sub; a server without it publishes nothing): the head takes its turn, the
-- one behind it evicts a head that does not. Part of the scripts that free a Lock or a permit.
local function notify_head(queue, tickets, channel, now)
  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)
  for _, id in ipairs(dead) do redis.call('ZREM', queue, id) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end
  local first = redis.call('ZRANGE', queue, 0, 1)
  if #first > 0 then redis.pcall('SPUBLISH', channel, table.concat(first, ' ')) end
end
