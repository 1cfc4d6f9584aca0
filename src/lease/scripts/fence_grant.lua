-- Fragment. The fencing numbers of fenced names, counted per hash slot (docs/keys.md, "Fence
-- counters"): one counter per slot and prefix, shared by every fenced name of the prefix in that
-- slot, so a name's fences strictly increase in grant order while the counters stay at most one
-- per slot.
-- next_fence(counter, own): the fence of a grant: the slot's `counter` plus one. `own` is the
-- name's own counter as the per-name layout kept it (nil: none, an Election's term): the fence
-- is made larger than it, and it is kept in step with the grants for a week, so that processes
-- of that layout still running (a rolling upgrade) keep counting above every fence given, then
-- it expires.
-- current_fence(counter): what a retry of a grant reports: the counter, no less than the fence
-- of the grant it repeats and less than any later holder's.
local fence_handover_ms = 604800000
local function next_fence(counter, own)
  local fence = redis.call('INCR', counter)
  if not own then return fence end
  local earlier = redis.call('GET', own)
  if not earlier then return fence end
  earlier = tonumber(earlier)
  if earlier >= fence then
    fence = earlier + 1
    redis.call('SET', counter, string.format('%d', fence))
  end
  if redis.call('PTTL', own) < 0 then
    redis.call('SET', own, string.format('%d', fence), 'PX', fence_handover_ms)
  else
    redis.call('SET', own, string.format('%d', fence), 'KEEPTTL')
  end
  return fence
end
local function current_fence(counter)
  return tonumber(redis.call('GET', counter) or '0')
end
