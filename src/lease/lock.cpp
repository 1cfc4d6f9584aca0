#include "leasehold/lock.hpp"

#include <algorithm>

#include "lease_scripts.hpp"
#include "scripts.hpp"

namespace leasehold::detail {

// The scripts' contracts are in src/lease/scripts/.
const Script& lock_release_script() {
  static const Script script{std::string(lua::lock_release)};
  return script;
}

Request lock_release_request(std::string_view key, std::string_view id_hex, bool observable) {
  // A Lock's release sends its key alone: the common path stays a compare-and-delete of one key.
  const std::string observed = observable ? observed_key(key) : std::string();
  const std::string_view keys[] = {key, observed};
  const std::span<const std::string_view> used(keys, observable ? 2 : 1);
  const std::string_view id[] = {id_hex};
  // The script names the channels of a key with a hash tag, or without braces; braces that make
  // no tag are escaped by same_slot_key(), which the script does not repeat.
  if (hash_tag(key) != key || (!key.empty() && key.find_first_of("{}") == std::string_view::npos))
    return Request::script(lock_release_script(), used, id);
  const std::string released = released_channel(key);
  const std::string changed = changed_channel(key);
  const std::string_view args[] = {id_hex, released, changed};
  return Request::script(lock_release_script(), used, args);
}

std::optional<std::string> name_in_tagged_key(std::string_view key, std::string_view head,
                                              std::initializer_list<std::string_view> tails) {
  if (!key.starts_with(head))
    return std::nullopt;
  key.remove_prefix(head.size());
  const auto tail = std::find_if(tails.begin(), tails.end(), [&](std::string_view t) {
    return key.size() > t.size() + 1 && key.ends_with(t) && key[key.size() - t.size() - 1] == '}';
  });
  if (tail == tails.end())
    return std::nullopt;
  const std::string_view escaped = key.substr(0, key.size() - tail->size() - 1);
  std::string name;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    const std::string_view rest = escaped.substr(i);
    if (rest.starts_with("%7B"))
      name += '{', i += 2;
    else if (rest.starts_with("%7D"))
      name += '}', i += 2;
    else if (rest.starts_with("%25"))
      name += '%', i += 2;
    else
      name += escaped[i];
  }
  return name;
}

const Script& lock_force_release_script() {
  static const Script script{std::string(lua::lock_force_release)};
  return script;
}

Request lock_force_release_request(std::string_view key) {
  const std::string observed = observed_key(key);
  const std::string_view keys[] = {key, observed};
  const std::string released = released_channel(key);
  const std::string changed = changed_channel(key);
  const std::string_view args[] = {released, changed};
  return Request::script(lock_force_release_script(), keys, args).retry_safe();
}

Request lock_lease_release_request(const LeaseState& state) {
  return lock_release_request(state.key, state.value);
}

const Script& lock_extend_script() {
  static const Script script{std::string(lua::lock_extend)};
  return script;
}

const LeaseKind kLockLease{lock_release_script, lock_extend_script, lock_lease_release_request};

const Script& lock_try_fenced_script() {
  static const Script script{std::string(lua::lock_try_fenced)};
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
  const Clock::time_point now = Clock::now();
  auto state = std::make_shared<LeaseState>(std::move(key), id, ttl, now, kind,
                                            std::move(second_key), std::string(value));
  state->granted_at = now;  // when this process took it over: its grant is another's
  return state;
}

bool lost_in_some_part(const Reply& reply, const LeaseState& lease) noexcept {
  if (reply.type != Reply::Type::array || reply.elements.size() != lease.slot_parts)
    return false;
  const auto answered = [&reply](long long held) {
    return std::any_of(reply.elements.begin(), reply.elements.end(), [held](const Reply& part) {
      return part.type == Reply::Type::integer && part.integer == held;
    });
  };
  return answered(0) && answered(1);  // an error part alone proves no loss
}

Request lease_request(const LeaseState& state, bool extend) {
  const LeaseKind& kind = state.kind != nullptr ? *state.kind : kLockLease;
  if (!extend && kind.release_request != nullptr)
    return kind.release_request(state);
  if (extend && kind.extend_request != nullptr)
    return kind.extend_request(state);
  const DecimalDigits ttl(extend ? state.ttl.count() : 0);  // a release sends no TTL
  const std::string_view args[] = {state.value, ttl.view()};
  const std::string_view keys[] = {state.key, state.second_key};
  const std::span<const std::string_view> used_keys(keys, state.second_key.empty() ? 1 : 2);
  if (extend)
    return Request::script(kind.extend(), used_keys, args).grants_lease();
  return Request::script(kind.release(), used_keys, std::span(args, 1));
}

}  // namespace leasehold::detail
