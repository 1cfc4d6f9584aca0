-- Frees a Lock's name whoever holds it (an operator's release).
-- KEYS[1] the lock key, KEYS[2] its observed hash (observed.lua). ARGV[1] the lock's release
-- channel, ARGV[2] its change channel.
-- Reply: 1 if the key held a lease and was deleted, else 0. A key marked with the value at the
-- head of the queue (lock_holder.lua) has that value published on the release channel, as a
-- release does; one marked observed has its change announced (only then are the observers'
-- hash commands run: a Lock's user needs none of them).
--! include observed.lua
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
redis.call('DEL', KEYS[1])
local waiting = waiting_in_mark(value)
if waiting then redis.pcall('SPUBLISH', ARGV[1], waiting) end
if observed_mark(value) then announce(KEYS[2], ARGV[2], KEYS[1]) end
return 1
