-- The extend of a Lock's lease.
-- KEYS[1] the lock key. ARGV[1] the lease's value, ARGV[2] its TTL in ms.
-- Reply: 1 if the key held this lease (bare, or marked with the head waiter's) and its TTL
-- restarted, else 0. A missing key stays missing: extend never resurrects a lease.
--! include holds_lease.lua
if holds_lease(redis.call('GET', KEYS[1]), ARGV[1]) then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
