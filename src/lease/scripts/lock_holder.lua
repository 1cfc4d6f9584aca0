-- Fragment. A lock key holds its holder's lease id, bare while nobody waits for it nor observes
-- it. A waiter refused while the lock is held marks the key with the ids at the head of the
-- queue, the head and the one behind it ("<id>:<head id> <second id>", the key's TTL kept), so
-- that the release tells both: the head takes its turn, the second evicts a head that does not
-- (lock_in_turn.lua). An observed key's mark ends with a "*" ("<id>:*", "<id>:<head id> *"), so
-- that its release announces the change to the observers (observed.lua). An uncontended,
-- unobserved release costs no more than a plain compare-and-delete. Every script that compares a
-- holder's id reads it up to the ':'.
-- holder_of(value) is the lease id in a lock key's value (nil for a missing key).
-- next_two(queue, from) is the ids at places from + 1 and from + 2 of the queue, space-separated,
-- or nil when there are none.
-- observed_mark(value) is whether the value's mark ends with the observers' "*";
-- waiting_in_mark(value) the waiters' ids in its mark (nil when none).
-- marked_value(lease, waiting, observed) is the value of a key held by `lease` with that mark.
-- mark_head(key, value, queue) rewrites the key (whose value is `value`) to name the queue's
-- first two, or to the bare id when nobody waits, keeping its TTL and its "*", if it does not
-- already.
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
local function observed_mark(value)
  local tail = string.sub(value, -2)
  return tail == ':*' or tail == ' *'
end
local function waiting_in_mark(value)
  local mark = string.find(value, ':', 1, true)
  if not mark then return nil end
  local waiting = string.sub(value, mark + 1)
  if observed_mark(value) then waiting = string.sub(waiting, 1, -3) end
  if waiting == '' then return nil end
  return waiting
end
local function marked_value(lease, waiting, observed)
  local mark = waiting
  if observed then
    if mark then mark = mark .. ' *' else mark = '*' end
  end
  if mark then return lease .. ':' .. mark end
  return lease
end
local function mark_head(key, value, queue)
  local marked = marked_value(holder_of(value), next_two(queue, 0), observed_mark(value))
  if marked ~= value then redis.call('SET', key, marked, 'KEEPTTL') end
end
