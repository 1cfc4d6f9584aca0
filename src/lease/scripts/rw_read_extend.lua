-- The extend of an RwLock's reader lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set. ARGV[1] the reader's value, ARGV[2] its TTL
-- in ms.
-- Reply: 1 this reader's lease restarted, 0 it had ended (an ended lease is never resurrected).
-- Other readers' leases are untouched.
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
--! include rw_lease_acts.lua
return extend_reader(ARGV[1], ARGV[2])
