-- Fragment. A lock key holds its holder's lease id, bare while nobody waits for it. A waiter
-- refused while the lock is held marks the key with the id at the head of the queue
-- ("<id>:<head id>", the key's TTL kept), so that the release tells that waiter and an
-- uncontended release costs no more than a plain compare-and-delete. Every script that compares a
-- holder's id reads it up to the ':'.
-- holder_of(value) is the lease id in a lock key's value (nil for a missing key).
-- mark_head(key, value, head) rewrites the key (whose value is `value`) to name `head`, or to the
-- bare id when `head` is nil, keeping its TTL, if it does not already.
local function holder_of(value)
  if not value then return nil end
  local mark = string.find(value, ':', 1, true)
  if mark then return string.sub(value, 1, mark - 1) end
  return value
end
local function mark_head(key, value, head)
  local marked = holder_of(value)
  if head then marked = marked .. ':' .. head end
  if marked ~= value then redis.call('SET', key, marked, 'KEEPTTL') end
end
