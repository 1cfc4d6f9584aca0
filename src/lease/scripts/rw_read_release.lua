-- The release of an RwLock's reader lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the queue, KEYS[4] the tickets.
-- ARGV[1] the reader's value, ARGV[2] the lock's release channel.
-- Reply: 1 this reader's lease removed (and when it was the last, the waiters whose turn it is
-- told), 0 it had ended.
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
--! include rw_lease_acts.lua
return release_reader(ARGV[1], ARGV[2])
