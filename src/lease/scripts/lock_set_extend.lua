-- The extend of a lease on several names of a Lock (lock_set.hpp): all of them, or none.
-- KEYS[1..n] the lock keys. ARGV[1] the lease's value, ARGV[2] its TTL in ms, ARGV[3..n+2] each
-- key's release channel.
-- Reply: 1 if every key held this lease and its TTL restarted; else 0, and the keys that still
-- held it are released (their waiters told): a lease that lost one name is lost, and keeps no
-- other. A missing key stays missing: extend never resurrects a lease.
--! include lock_holder.lua
local values = {}
local whole = true
for i = 1, #KEYS do
  values[i] = redis.call('GET', KEYS[i])
  if not (values[i] and holder_of(values[i]) == ARGV[1]) then whole = false end
end
if whole then
  for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  return 1
end
for i = 1, #KEYS do
  if values[i] and holder_of(values[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    local waiting = waiting_in_mark(values[i])
    if waiting then redis.pcall('SPUBLISH', ARGV[i + 2], waiting) end
  end
end
return 0
