-- Frees a Lock's name whoever holds it (an operator's release).
-- KEYS[1] the lock key. ARGV[1] the lock's release channel.
-- Reply: 1 if the key held a lease and was deleted, else 0. A key marked with the value at the
-- head of the queue (lock_holder.lua) has that value published on the channel, as a release does.
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
redis.call('DEL', KEYS[1])
local mark = string.find(value, ':', 1, true)
if mark then redis.pcall('SPUBLISH', ARGV[1], string.sub(value, mark + 1)) end
return 1
