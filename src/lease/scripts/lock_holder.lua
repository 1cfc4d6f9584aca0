-- Fragment. A lock key holds its holder's lease id, bare while nobody waits for it. A waiter
-- refused while the lock is held marks the key with the ids at the head of the queue, the head
-- and the one behind it ("<id>:<head id> <second id>", the key's TTL kept), so that the release
-- tells both: the head takes its turn, the second evicts a head that does not (lock_in_turn.lua).
-- An uncontended release costs no more than a plain compare-and-delete. Every script that
-- compares a holder's id reads it up to the ':'.
-- holder_of(value) is the lease id in a lock key's value (nil for a missing key).
-- next_two(queue, from) is the ids at places from + 1 and from + 2 of the queue, space-separated,
-- or nil when there are none.
-- mark_head(key, value, queue) rewrites the key (whose value is `value`) to name the queue's
-- first two, or to the bare id when nobody waits, keeping its TTL, if it does not already.
local function holder_of(value)
  if not value then return nil end
  local mark = string.find(value, ':', 1, true)
  if mark then return string.sub(value, 1, mark - 1) end
  return value
end
local function next_two(queue, from)
  local ids = redis.call('ZRANGE', queue, from, from + 1)
  if #ids == 0 then return nil end
  return table.concat(ids, ' ')
end
local function mark_head(key, value, queue)
  local marked = holder_of(value)
  local waiting = next_two(queue, 0)
  if waiting then marked = marked .. ':' .. waiting end
  if marked ~= value then redis.call('SET', key, marked, 'KEEPTTL') end
end
