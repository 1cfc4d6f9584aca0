-- The type of value each key holds, for status tools (describe.hpp). Reads only.
-- KEYS: the keys, of one hash slot. No ARGV.
-- Reply: one type name per key, as TYPE names it ('none' for a missing key).
local types = {}
for i, key in ipairs(KEYS) do
  types[i] = redis.call('TYPE', key)['ok']
end
return types
