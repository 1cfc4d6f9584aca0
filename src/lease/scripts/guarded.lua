-- Commands run only while a lease is held: the check and the commands are one script, so no
-- other client's command comes between them (a guarded write).
-- KEYS[1] where the lease is: the key holding its value (a Lock's, an Election's, an RwLock's
-- writer key) or the set holding it as a member scored with its end in server ms (an RwLock's
-- readers, a Semaphore's holders); KEYS[2..] the keys the commands touch.
-- ARGV[1] 'value' or 'member' (which of the two KEYS[1] is), ARGV[2] the lease's value, ARGV[3]
-- the number of commands, then for each: its number of arguments, then its arguments (its name
-- first).
-- Reply: {0} when the lease is not held (no command ran); else {1, then each command's reply}.
-- A command's error ends the script with that error, naming the command (those before it ran).
--! include holds_lease.lua
local held
if ARGV[1] == 'member' then
  local ends = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if ends then
    local clock = redis.call('TIME')
    local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    held = tonumber(ends) > now
  end
else
  held = holds_lease(redis.call('GET', KEYS[1]), ARGV[2])
end
if not held then return {0} end

local replies = {1}
local at = 4
for i = 1, tonumber(ARGV[3]) do
  local count = tonumber(ARGV[at])
  local command = {unpack(ARGV, at + 1, at + count)}
  at = at + count + 1
  local reply = redis.pcall(unpack(command))
  if type(reply) == 'table' and reply.err then
    return redis.error_reply(reply.err .. ' (guarded command ' .. i .. ', ' .. command[1] ..
        '; the commands before it ran)')
  end
  replies[#replies + 1] = reply
end
return replies
