-- Fragment. Of a name's observers, at most two look when its holder's lease would run out (a
-- holder that crashed tells no one) and announce what they find; the others only renew the
-- observed hash (observed.lua). The hash's field `lookers` names them, with the server ms their
-- duty runs out at (renewed by each of their looks): "<id> <until>[ <id> <until>]".
-- live_lookers(observed, now) is the lookers whose duty has not run out, as {id, until} pairs.
-- set_lookers(observed, lookers) writes them back.
local function live_lookers(observed, now)
  local field = redis.call('HGET', observed, 'lookers') or ''
  local lookers = {}
  local id = nil
  for word in string.gmatch(field, '%S+') do
    if id then
      if tonumber(word) > now then lookers[#lookers + 1] = {id, word} end
      id = nil
    else
      id = word
    end
  end
  return lookers
end
local function set_lookers(observed, lookers)
  local words = {}
  for _, looker in ipairs(lookers) do
    words[#words + 1] = looker[1] .. ' ' .. looker[2]
  end
  redis.call('HSET', observed, 'lookers', table.concat(words, ' '))
end
