-- An observer stops observing a name (watch.hpp).
-- KEYS[1] the observed hash (observed.lua). ARGV[1] the observer's id.
-- Reply: 1 if it was a looker (the next observer that renews takes its duty), else 0.
-- The hash lives on for its TTL, and the key stays marked observed until its lease ends:
-- announcing to nobody costs a call.
--! include observers.lua
local lookers = live_lookers(KEYS[1], 0)
for i, looker in ipairs(lookers) do
  if looker[1] == ARGV[1] then
    table.remove(lookers, i)
    set_lookers(KEYS[1], lookers)
    return 1
  end
end
return 0
