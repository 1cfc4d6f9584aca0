-- The release of an RwLock's reader lease.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the queue, KEYS[4] the tickets.
-- ARGV[1] the reader's value, ARGV[2] the lock's release channel.
-- Reply: 1 this reader's lease removed (and when it was the last, the waiters whose turn it is
-- told), 0 it had ended.
--! include rw_arguments.lua
if #ARGV ~= 2 then return wrong_arguments(2) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
keep_readers_expiry()
if redis.call('EXISTS', KEYS[2]) == 0 and
    redis.pcall('EXISTS', KEYS[3]) == 1 then
  notify_turns(KEYS[3], KEYS[4], ARGV[2])
end
return removed
