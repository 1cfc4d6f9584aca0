-- The extend of an RwLock's writer lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set. ARGV[1] the writer's value, ARGV[2] its TTL
-- in ms.
-- Reply: 1 its TTL restarted, 0 not held by this writer.
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
--! include rw_lease_acts.lua
return extend_writer(ARGV[1], ARGV[2])
