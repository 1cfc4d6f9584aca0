-- Fragment (after fence_grant.lua). grant_set(n, held, counters): the grant of a lease on several
-- names (lock_set.hpp) once none of them is held by another: KEYS[1..n] are the names' lease keys,
-- ARGV[1] the lease's value, ARGV[2] its TTL in ms; held[i] whether KEYS[i] holds this lease
-- already (its TTL restarts, its mark is kept); with `counters`, KEYS[counters + i] is the fence
-- counter of KEYS[i] (a single server's one counter may come n times) and KEYS[counters + n + i] the name's own counter. Answers {1, the
-- fence of each name (0 when not fenced)}.
local function grant_set(n, held, counters)
  local reply = {1}
  for i = 1, n do
    local fence = 0
    if held[i] then
      redis.call('PEXPIRE', KEYS[i], ARGV[2])
      if counters then fence = current_fence(KEYS[counters + i]) end
    else
      redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
      if counters then fence = next_fence(KEYS[counters + i], KEYS[counters + n + i]) end
    end
    reply[i + 1] = fence
  end
  return reply
end
