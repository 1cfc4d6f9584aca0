-- The release of an RwLock's writer lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the queue, KEYS[4] the tickets.
-- ARGV[1] the writer's value, ARGV[2] the lock's release channel.
-- Reply: 1 deleted (and the waiters whose turn it is told), 0 not held by this writer.
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
--! include rw_lease_acts.lua
return release_writer(ARGV[1], ARGV[2])
