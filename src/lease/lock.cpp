#include "leasehold/lock.hpp"

namespace leasehold::detail {

std::string_view notify_head_lua() {
  return "local function notify_head(queue, tickets, channel)\n"
         "  local time = redis.call('TIME')\n"
         "  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
         "  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)\n"
         "  for _, id in ipairs(dead) do redis.call('ZREM', queue, id) end\n"
         "  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end\n"
         "  local head = redis.call('ZRANGE', queue, 0, 0)[1]\n"
         "  if head then redis.pcall('SPUBLISH', channel, head) end\n"
         "end\n";
}

std::string_view take_place_lua() {
  return "local function take_place(queue, tickets, member, now, ticket)\n"
         "  local dead = redis.call('ZRANGEBYSCORE', tickets, '-inf', now)\n"
         "  for _, id in ipairs(dead) do redis.call('ZREM', queue, id) end\n"
         "  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now) end\n"
         "  if not redis.call('ZSCORE', queue, member) then\n"
         "    local last = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')\n"
         "    local arrival = 1\n"
         "    if last[2] then arrival = tonumber(last[2]) + 1 end\n"
         "    redis.call('ZADD', queue, arrival, member)\n"
         "  end\n"
         "  redis.call('ZADD', tickets, now + ticket, member)\n"
         "end\n";
}

std::string_view lock_holder_lua() {
  return "local function holder_of(value)\n"
         "  if not value then return nil end\n"
         "  local mark = string.find(value, ':', 1, true)\n"
         "  if mark then return string.sub(value, 1, mark - 1) end\n"
         "  return value\n"
         "end\n"
         "local function mark_head(key, value, head)\n"
         "  local marked = holder_of(value)\n"
         "  if head then marked = marked .. ':' .. head end\n"
         "  if marked ~= value then redis.call('SET', key, marked, 'KEEPTTL') end\n"
         "end\n";
}

namespace {

// A lock release: GET, compare, DEL. A key that holds its bare id has nobody waiting for it, and
// its release is exactly a plain compare-and-delete: the waiters' cost falls on the waiters, who
// write the id at the head of the queue into the key (see lock_holder_lua()). A key marked so is
// deleted, and that id is published on the channel `channel` (a Lua expression: the channel's
// name, built only when someone waits). A head whose ticket ran out is told in vain; the waiter
// behind it tries when that ticket ends.
std::string lock_release_lua(std::string_view channel) {
  return "local value = redis.call('GET', KEYS[1])\n"
         "if value == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
         "if not value or string.sub(value, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then return 0 end\n"
         "redis.call('DEL', KEYS[1])\n"
         "redis.pcall('SPUBLISH', " +
         std::string(channel) +
         ", string.sub(value, #ARGV[1] + 2))\n"
         "return 1\n";
}

}  // namespace

// KEYS[1] lock key, ARGV[1] lease id [, ARGV[2] its release channel] -> 1 if the key held this id
// and was deleted (and, if it named a waiter, that waiter was told), else 0. Without ARGV[2] the
// key carries a hash tag, and the channel is its name and ":released" (what same_slot_key() gives
// such a key).
const Script& lock_release_script() {
  static const Script script(lock_release_lua("ARGV[2] or (KEYS[1] .. ':released')"));
  return script;
}

// KEYS[1] a lock key without braces, ARGV[1] lease id -> as lock_release_script(); the channel is
// named as same_slot_key() names it: the key, ":released" and the key as a hash tag.
const Script& lock_release_untagged_script() {
  static const Script script(lock_release_lua("KEYS[1] .. ':released{' .. KEYS[1] .. '}'"));
  return script;
}

Request lock_release_request(std::string_view key, std::string_view id_hex) {
  const std::string_view keys[] = {key};
  const std::string_view id[] = {id_hex};
  if (hash_tag(key) != key)
    return Request::script(lock_release_script(), keys, id);
  if (!key.empty() && key.find_first_of("{}") == std::string_view::npos)
    return Request::script(lock_release_untagged_script(), keys, id);
  // Braces that make no tag: same_slot_key() escapes them, which the script does not repeat.
  const std::string channel = released_channel(key);
  const std::string_view args[] = {id_hex, channel};
  return Request::script(lock_release_script(), keys, args);
}

Request lock_lease_release_request(const LeaseState& state) {
  return lock_release_request(state.key, state.value);
}

// KEYS[1] lock key, ARGV[1] lease id, ARGV[2] ttl in ms -> 1 if the key held this id (bare, or
// marked with the head waiter's) and its TTL restarted, else 0. A missing key stays missing:
// extend never resurrects a lease.
const Script& lock_extend_script() {
  static const Script script(
      "local value = redis.call('GET', KEYS[1])\n"
      "if value == ARGV[1] or\n"
      "    (value and string.sub(value, 1, #ARGV[1] + 1) == ARGV[1] .. ':') then\n"
      "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
      "end\n"
      "return 0\n");
  return script;
}

// KEYS[1] lock key, KEYS[2] fence counter, ARGV[1] lease id, ARGV[2] ttl in ms -> the fencing
// number (>= 1) if this id holds the lock now (taken now, or already: a retry), 0 if another id
// holds it. The counter never expires; it grows by one per grant.
const Script& lock_try_fenced_script() {
  static const Script script(std::string(lock_holder_lua()) +
                             "local holder = redis.call('GET', KEYS[1])\n"
                             "if holder_of(holder) == ARGV[1] then return "
                             "tonumber(redis.call('GET', KEYS[2]) or '0') end\n"
                             "if holder then return 0 end\n"
                             "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                             "return redis.call('INCR', KEYS[2])\n");
  return script;
}

std::shared_ptr<LeaseState> adopted_lease(std::string key, std::string_view value,
                                          std::chrono::milliseconds ttl, const LeaseKind* kind,
                                          std::string second_key) {
  // A lease's value is its id's 32 hex digits, then ";" and its holder when it has one; it holds
  // no ':' (a waiter's mark) nor spaces or control characters (holder.hpp escapes them).
  const auto bad = [&](const std::string& why) {
    return Error(make_error_code(errc::invalid_argument),
                 "not a lease token: " + why +
                     "; a token is the value its acquire printed (32 hex digits, then its holder)");
  };
  if (value.size() < 2 * LeaseId::kSize)
    throw bad("it is " + std::to_string(value.size()) + " characters long");
  if (value.size() > 2 * LeaseId::kSize && value[2 * LeaseId::kSize] != ';')
    throw bad("its 32 hex digits are followed by something else than ';'");
  for (char c : value)
    if (c == ':' || c == ' ' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw bad("it holds a ':', a space or a control character");
  LeaseId id;
  try {
    id = LeaseId::from_hex(value.substr(0, 2 * LeaseId::kSize));
  } catch (const Error&) {
    throw bad("it does not start with 32 hex digits");
  }
  validate_ttl(ttl);
  return std::make_shared<LeaseState>(std::move(key), id, ttl, Clock::now(), kind,
                                      std::move(second_key), std::string(value));
}

Request lease_request(const LeaseState& state, bool extend) {
  const LeaseKind& kind = state.kind != nullptr ? *state.kind : kLockLease;
  if (!extend && kind.release_request != nullptr)
    return kind.release_request(state);
  const DecimalDigits ttl(extend ? state.ttl.count() : 0);  // a release sends no TTL
  const std::string_view args[] = {state.value, ttl.view()};
  const std::string_view keys[] = {state.key, state.second_key};
  const std::span<const std::string_view> used_keys(keys, state.second_key.empty() ? 1 : 2);
  if (extend)
    return Request::script(kind.extend(), used_keys, args).grants_lease();
  return Request::script(kind.release(), used_keys, std::span(args, 1));
}

}  // namespace leasehold::detail
