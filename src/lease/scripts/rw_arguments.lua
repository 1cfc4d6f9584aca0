-- Fragment. No RwLock script takes a time from the client: a call with another number of
-- arguments than its own is refused with wrong_arguments(count), before it changes anything.
local function wrong_arguments(count)
  return redis.error_reply('ERR leasehold: this script takes ' .. count ..
      ' arguments; lease times come from the server, never from the client')
end
