-- Fragment (after rw_prelude.lua). notify_turns(queue, tickets, channel) drops the waiters whose
-- ticket ran out and publishes the values of those whose turn it is: the writer at the head, or
-- the readers before the first writer (up to 1000; the others find out at their recheck); and
-- the value of the one behind them, which gives a head that does not take its turn its grace.
-- Queue members are "<kind>:<value>", kind 'r' or 'w'.
local function notify_turns(queue, tickets, channel)
  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)
  for _, m in ipairs(dead) do redis.call('ZREM', queue, m) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end
  local ids = {}
  local members = redis.call('ZRANGE', queue, 0, 1000)
  for i, m in ipairs(members) do
    ids[#ids + 1] = string.sub(m, 3)
    local after = members[i + 1]
    if string.sub(m, 1, 1) == 'w' or (after and string.sub(after, 1, 1) == 'w') then
      if after then ids[#ids + 1] = string.sub(after, 3) end
      break
    end
  end
  if #ids > 0 then redis.pcall('SPUBLISH', channel, table.concat(ids, ' ')) end
end
