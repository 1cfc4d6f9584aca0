-- The release of a Lock's lease.
-- KEYS[1] the lock key, KEYS[2] (optional) its observed hash (observed.lua). ARGV[1] the lease's
-- value (its id and holder); ARGV[2] the lock's release channel and ARGV[3] its change channel,
-- given only when the key holds braces that make no hash tag.
-- Reply: 1 if the key held this lease and was deleted (and, if it named a waiter, that waiter
-- was told; if it was observed, the observers were), else 0.
-- A key that holds the bare value has nobody waiting for it nor observing it, and its release is
-- exactly a plain compare-and-delete: the waiters' cost falls on the waiters, who write the
-- value at the head of the queue into the key (lock_holder.lua). A key marked so is deleted,
-- and that value is published on the release channel. A head whose ticket ran out is told in
-- vain; the waiter behind it tries when that ticket ends.
--! include observed.lua
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then return redis.call('DEL', KEYS[1]) end
if not value or string.sub(value, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then return 0 end
redis.call('DEL', KEYS[1])
-- The channels, named as same_slot_key() names them: in the slot of the key's hash tag, or with
-- the key itself as the tag.
local function channel(suffix, given)
  if given then return given end
  if string.find(KEYS[1], '{', 1, true) then return KEYS[1] .. suffix end
  return KEYS[1] .. suffix .. '{' .. KEYS[1] .. '}'
end
local waiting = waiting_in_mark(value)
if waiting then redis.pcall('SPUBLISH', channel(':released', ARGV[2]), waiting) end
if KEYS[2] and observed_mark(value) then
  announce(KEYS[2], channel(':changed', ARGV[3]), KEYS[1])
end
return 1
