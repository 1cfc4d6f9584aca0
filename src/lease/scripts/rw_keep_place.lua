-- An RwLock's waiter renews its place without a try (wait.hpp: a waiter behind the first two).
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the intent key, KEYS[4] the
-- tickets. ARGV[1] the member ("<kind>:<value>"), ARGV[2] the server ms its place now runs out
-- at, by the client's measure of the server's clock (clock.hpp): a place is not a lease, whose
-- times come from the server.
-- Reply: 0 if the waiter is not queued (its place ran out: its next try queues it again), 1 if
-- it is and what keeps its kind out is gone (its try takes the lease, or gives the waiters
-- ahead their grace), 2 if it is and the lock is held against it: a writer, or readers (for a
-- writer), or a queued writer's intent (for a reader).
if redis.call('ZADD', KEYS[4], 'XX', 'CH', ARGV[2], ARGV[1]) == 0 then return 0 end
local blockers = KEYS[2]
if string.sub(ARGV[1], 1, 1) == 'r' then blockers = KEYS[3] end
if redis.call('EXISTS', KEYS[1], blockers) > 0 then return 2 end
return 1
