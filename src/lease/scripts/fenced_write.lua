-- A fenced write: done only when the fence presented is not older than the newest one the
-- resource has seen, which it then records. Fences are compared as decimal digits (no leading
-- zeros), exactly, whatever their size.
-- ARGV[1] the fence presented, ARGV[2] the form:
--   'check': KEYS[1] the resource's fence record (a string); records the fence, writes nothing
--            else;
--   'set':   KEYS[1] the fence record, KEYS[2] the data key; ARGV[3] the value to SET there;
--   'hset':  KEYS[1] the hash; ARGV[3] the field holding its fence, then field, value pairs to
--            HSET in it with the fence.
-- Reply: {1, fence} when the write was done (the fence is the newest now), {0, newest} when it
-- was refused (nothing was written); an error when the record holds no fence.
local function not_older(fence, newest)
  if #fence ~= #newest then return #fence > #newest end
  return fence >= newest
end

local fence, form = ARGV[1], ARGV[2]
local newest
if form == 'hset' then
  newest = redis.call('HGET', KEYS[1], ARGV[3])
else
  newest = redis.call('GET', KEYS[1])
end
if newest and not string.match(newest, '^%d+$') then
  return redis.error_reply('ERR leasehold: ' .. KEYS[1] .. ' holds "' .. string.sub(newest, 1, 40) ..
      '" where a fence should be; it is not a fence record')
end
if newest and not not_older(fence, newest) then return {0, newest} end

if form == 'hset' then
  local fields = {ARGV[3], fence}
  for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
  redis.call('HSET', KEYS[1], unpack(fields))
else
  redis.call('SET', KEYS[1], fence)
  if form == 'set' then redis.call('SET', KEYS[2], ARGV[3]) end
end
return {1, fence}
