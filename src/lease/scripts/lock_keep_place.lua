-- A Lock's waiter renews its place without a try (wait.hpp: a waiter behind the first two).
-- KEYS[1] the lock key, KEYS[2] its tickets. ARGV[1] the waiter's value, ARGV[2] the server ms
-- its place now runs out at, by the client's measure of the server's clock (clock.hpp).
-- Reply: 0 if the waiter is not queued (its place ran out: its next try queues it again), 1 if
-- it is and the lock is free (the waiters ahead have not taken it: its try gives them their
-- grace), 2 if it is and the lock is held.
if redis.call('ZADD', KEYS[2], 'XX', 'CH', ARGV[2], ARGV[1]) == 0 then return 0 end
return 1 + redis.call('EXISTS', KEYS[1])
