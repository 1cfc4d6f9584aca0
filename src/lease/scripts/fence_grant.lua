-- Fragment. The fencing numbers of fenced names, counted on a shared counter (docs/keys.md,
-- "Fence counters"): a single server's one counter per prefix, or on a Redis Cluster the counter
-- of the name's hash slot (a script's keys share a slot), so a name's fences strictly increase in
-- grant order while the counters stay one, or at most one per slot. The request's keys name the
-- counter of its topology (fence_counters.hpp).
-- next_fence(counter, own): the fence of a grant: one more than the `counter`'s last, and no less
-- than the server's clock in microseconds; the counter takes it. The clock keeps fences
-- increasing where a counter lost its last value — evicted, dropped by a failover with the writes
-- the new master never received, left behind when the data moved — since a fence is at most the
-- clock of its grant (a counter outruns the clock only past a million grants a second), provided
-- no server's clock is behind the one of an earlier grant. `own` is the name's own counter as the
-- per-name layout kept it: the fence is made larger than it, and it is kept in step with the
-- grants for a week, so that processes of that layout still running (a rolling upgrade) keep
-- counting above every fence given, then it expires.
-- next_term(counter): an Election's term: one more than the last, counting leaderships of the
-- name one by one (a term is shown to people, and observers are told it).
-- current_fence(counter): what a retry of a grant reports: the counter, no less than the fence
-- of the grant it repeats and less than any later holder's.
local fence_handover_ms = 604800000
local function next_fence(counter, own)
  -- One write: the clock is nearly always past the counter, so INCR then SET would be two.
  local last = redis.call('GET', counter)
  if last and not string.match(last, '^%-?%d+$') then
    redis.call('INCR', counter)  -- its error reply: the counter holds no integer
  end
  local time = redis.call('TIME')
  local fence = math.max(tonumber(last or '0') + 1, tonumber(time[1]) * 1000000 + tonumber(time[2]))
  local earlier = redis.call('GET', own)
  if earlier then fence = math.max(fence, tonumber(earlier) + 1) end
  redis.call('SET', counter, string.format('%d', fence))
  if earlier then
    if redis.call('PTTL', own) < 0 then
      redis.call('SET', own, string.format('%d', fence), 'PX', fence_handover_ms)
    else
      redis.call('SET', own, string.format('%d', fence), 'KEEPTTL')
    end
  end
  return fence
end
local function next_term(counter)
  return redis.call('INCR', counter)
end
local function current_fence(counter)
  return tonumber(redis.call('GET', counter) or '0')
end
