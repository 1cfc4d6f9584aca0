-- The release of a lease on several names of a Lock (lock_set.hpp).
-- KEYS[1..n] the lock keys. ARGV[1] the lease's value, ARGV[2..n+1] each key's release channel.
-- Reply: 1 if every key held this lease (all are deleted now), else 0: the lease had been lost,
-- and the keys that still held it are deleted. A key marked with waiters (lock_holder.lua) tells
-- them on its channel, as a single release does.
--! include lock_holder.lua
local released = 0
for i = 1, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if value and holder_of(value) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
    local waiting = waiting_in_mark(value)
    if waiting then redis.pcall('SPUBLISH', ARGV[i + 1], waiting) end
  end
end
if released == #KEYS then return 1 end
return 0
