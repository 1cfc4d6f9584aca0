-- Fragment. take_place(queue, tickets, member, now, ticket) drops the waiters whose ticket ran
-- out (at `now`, server ms), queues `member` at the back if it is not queued yet, and gives it a
-- ticket until now + ticket; returns the members that left. Part of every script that waits in
-- turn.
local function take_place(queue, tickets, member, now, ticket)
  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)
  for _, id in ipairs(dead) do redis.call('ZREM', queue, id) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end
  if not redis.call('ZSCORE', queue, member) then
    local last = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')
    local arrival = 1
    if last[2] then arrival = tonumber(last[2]) + 1 end
    redis.call('ZADD', queue, arrival, member)
  end
  redis.call('ZADD', tickets, now + ticket, member)
  return dead
end
