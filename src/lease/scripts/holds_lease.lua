-- Fragment. holds_lease(value, lease): whether a key's value (GET's reply; false when the key is
-- missing) is the lease `lease`, bare or marked by its queue (':' and the waiters' values).
local function holds_lease(value, lease)
  return value == lease or
      (value and string.sub(value, 1, #lease + 1) == lease .. ':') or false
end
