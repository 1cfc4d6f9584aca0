-- The release of a Lock's lease.
-- KEYS[1] the lock key. ARGV[1] the lease's value (its id and holder); ARGV[2] the lock's release
-- channel, given only when the key holds braces that make no hash tag.
-- Reply: 1 if the key held this lease and was deleted (and, if it named a waiter, that waiter
-- was told), else 0.
-- A key that holds the bare value has nobody waiting for it, and its release is exactly a plain
-- compare-and-delete: the waiters' cost falls on the waiters, who write the value at the head of
-- the queue into the key (lock_holder.lua). A key marked so is deleted, and that value is
-- published on the release channel. A head whose ticket ran out is told in vain; the waiter
-- behind it tries when that ticket ends.
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then return redis.call('DEL', KEYS[1]) end
if not value or string.sub(value, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then return 0 end
redis.call('DEL', KEYS[1])
-- The channel, named as same_slot_key() names it: in the slot of the key's hash tag, or with the
-- key itself as the tag.
local channel = ARGV[2]
if not channel then
  if string.find(KEYS[1], '{', 1, true) then
    channel = KEYS[1] .. ':released'
  else
    channel = KEYS[1] .. ':released{' .. KEYS[1] .. '}'
  end
end
redis.pcall('SPUBLISH', channel, string.sub(value, #ARGV[1] + 2))
return 1
