-- Frees an RwLock's name whoever holds it (an operator's release).
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the intent key, KEYS[4] the queue,
-- KEYS[5] the tickets. ARGV[1] the lock's release channel.
-- Reply: the number of keys deleted of the writer key, the readers' set and the intent; the
-- waiters whose turn it is then are told.
--! include rw_arguments.lua
if #ARGV ~= 1 then return wrong_arguments(1) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
local removed = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
if redis.pcall('EXISTS', KEYS[4]) == 1 then
  notify_turns(KEYS[4], KEYS[5], ARGV[1])
end
return removed
