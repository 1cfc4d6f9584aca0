-- A Semaphore's waiter renews its place without a try (wait.hpp: a waiter behind the first
-- two).
-- KEYS[1] the holders' set, KEYS[2] the tickets. ARGV[1] the waiter's value, ARGV[2] the server
-- ms its place now runs out at (by the client's measure of the server's clock, clock.hpp),
-- ARGV[3] the count of permits.
-- Reply: 0 if the waiter is not queued (its place ran out: its next try queues it again), 1 if
-- it is and a permit is free (the waiters ahead have not taken it: its try gives them their
-- grace), 2 if it is and every permit is held. Holders whose lease ended count as holders until
-- a script prunes them: the waiters ahead try when those leases end.
if redis.call('ZADD', KEYS[2], 'XX', 'CH', ARGV[2], ARGV[1]) == 0 then return 0 end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then return 1 end
return 2
