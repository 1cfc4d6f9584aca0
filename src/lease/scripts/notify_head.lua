-- Fragment. notify_head(queue, tickets, channel) drops the waiters whose ticket ran out and
-- publishes the id of the one at the head, if any, on the channel (sharded pub/sub; a server
-- without it publishes nothing). Part of the scripts that free a lock.
local function notify_head(queue, tickets, channel)
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)
  for _, id in ipairs(dead) do redis.call('ZREM', queue, id) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  if head then redis.pcall('SPUBLISH', channel, head) end
end
