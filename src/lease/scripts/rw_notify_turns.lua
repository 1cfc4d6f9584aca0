-- Fragment (after rw_prelude.lua). notify_turns(queue, tickets, channel) drops the waiters whose
-- ticket ran out and publishes the values of those whose turn it is: the writer at the head, or
-- the readers before the first writer (up to 1000; the others find out at their recheck). Queue
-- members are "<kind>:<value>", kind 'r' or 'w'.
local function notify_turns(queue, tickets, channel)
  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)
  for _, m in ipairs(dead) do redis.call('ZREM', queue, m) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end
  local ids = {}
  for _, m in ipairs(redis.call('ZRANGE', queue, 0, 999)) do
    if string.sub(m, 1, 1) == 'w' then
      if #ids == 0 then ids[1] = string.sub(m, 3) end
      break
    end
    ids[#ids + 1] = string.sub(m, 3)
  end
  if #ids > 0 then redis.pcall('SPUBLISH', channel, table.concat(ids, ' ')) end
end
