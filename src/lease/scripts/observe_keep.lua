-- An observer that is not a looker renews the observed hash without looking (watch.hpp).
-- KEYS[1] the observed hash (observed.lua). ARGV[1] the observer's id, ARGV[2] its ticket's TTL
-- in ms, ARGV[3] the server ms now, by the client's measure of the server's clock (clock.hpp).
-- Reply: 0 if nothing calls for a look; 1 if the observer should look now (the hash is gone, or
-- fewer than two lookers are on duty, or it is one of them).
--! include observers.lua
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then return 1 end
local lookers = live_lookers(KEYS[1], tonumber(ARGV[3]))
if #lookers < 2 then return 1 end
for _, looker in ipairs(lookers) do
  if looker[1] == ARGV[1] then return 1 end
end
return 0
