-- The release or the extend of an RwLock's lease found by its id alone, for a caller that kept
-- the id and not the lease's value (`leasehold release --token`): the writer's, or a reader's.
-- KEYS[1] the writer key, KEYS[2] the readers' set, KEYS[3] the queue, KEYS[4] the tickets.
-- ARGV[1] the lease's id (32 hex digits), ARGV[2] 'release', or the TTL in ms of an extend,
-- ARGV[3] the lock's release channel.
-- Reply: 1 released or restarted (as rw_*_release.lua and rw_*_extend.lua), 0 no lease of that
-- id holds the name.
--! include rw_arguments.lua
if #ARGV ~= 3 then return wrong_arguments(3) end
--! include rw_prelude.lua
--! include rw_notify_turns.lua
--! include rw_lease_acts.lua
-- A stored value is the id's lease when it is the id alone or the id and its holder (";…").
local function of_id(value)
  if not value or string.sub(value, 1, #ARGV[1]) ~= ARGV[1] then return false end
  local after = string.sub(value, #ARGV[1] + 1, #ARGV[1] + 1)
  return after == '' or after == ';'
end
local release = ARGV[2] == 'release'
local writer = redis.call('GET', KEYS[1])
if of_id(writer) then
  if release then return release_writer(writer, ARGV[3]) end
  return extend_writer(writer, ARGV[2])
end
for _, reader in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if of_id(reader) then
    if release then return release_reader(reader, ARGV[3]) end
    return extend_reader(reader, ARGV[2])
  end
end
return 0
