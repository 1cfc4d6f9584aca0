-- An RwLock's waiter renews its place without a try (wait.hpp: a waiter behind the first two).
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the tickets. ARGV[1] the member
-- ("<kind>:<value>"), ARGV[2] the server ms its place now runs out at, by the client's measure
-- of the server's clock (clock.hpp): a place is not a lease, whose times come from the server.
-- Reply: 0 if the waiter is not queued (its place ran out: its next try queues it again), 1 if
-- it is and nobody holds the lock (the waiters ahead have not taken it: its try gives them
-- their grace), 2 if it is and a writer or readers hold it.
if redis.call('ZADD', KEYS[3], 'XX', 'CH', ARGV[2], ARGV[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then return 2 end
return 1
