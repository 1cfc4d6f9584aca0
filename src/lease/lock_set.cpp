#include "leasehold/lock_set.hpp"

#include "lease_scripts.hpp"
#include "leasehold/detail/holder.hpp"
#include "leasehold/detail/keys.hpp"

namespace leasehold::detail {
namespace {

// The scripts' contracts are in src/lease/scripts/.
const Script& lock_set_try_script() {
  static const Script script{std::string(lua::lock_set_try)};
  return script;
}
const Script& lock_set_lease_script() {
  static const Script script{std::string(lua::lock_set_lease)};
  return script;
}
const Script& rw_set_try_script() {
  static const Script script{std::string(lua::rw_set_try)};
  return script;
}
const Script& rw_set_lease_script() {
  static const Script script{std::string(lua::rw_set_lease)};
  return script;
}

constexpr std::size_t kMaxNames = 1000;

// The release (no TTL) or the extend of the lease `value` held on `keys` (for writers: the
// writer keys, then the readers', queues and tickets): the value, the TTL or '', then each
// name's release channel.
Request set_lease_request(const Script& script, std::span<const std::string_view> keys,
                          std::size_t names, std::string_view value,
                          std::optional<std::chrono::milliseconds> ttl) {
  std::vector<std::string> channels;
  channels.reserve(names);
  for (std::size_t i = 0; i < names; ++i)
    channels.push_back(released_channel(keys[i]));
  const DecimalDigits ttl_ms(ttl ? ttl->count() : 0);
  std::vector<std::string_view> args{value, ttl ? ttl_ms.view() : std::string_view()};
  args.insert(args.end(), channels.begin(), channels.end());
  Request request = Request::script(script, keys, args);
  if (ttl)
    return std::move(request).grants_lease();
  return request;
}

// Every key of a lease on several names: `key`, then the others.
std::vector<std::string_view> keys_of(const LeaseState& lease) {
  std::vector<std::string_view> keys{lease.key};
  keys.insert(keys.end(), lease.more_keys.begin(), lease.more_keys.end());
  return keys;
}

Request lock_set_release_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(lock_set_lease_script(), keys, keys.size(), lease.value, std::nullopt);
}
Request lock_set_extend_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(lock_set_lease_script(), keys, keys.size(), lease.value, lease.ttl);
}
Request rw_set_release_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(rw_set_lease_script(), keys, keys.size() / 4, lease.value, std::nullopt);
}
Request rw_set_extend_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(rw_set_lease_script(), keys, keys.size() / 4, lease.value, lease.ttl);
}

// Leases on several names: a Lock's keys (key, more_keys), or an RwLock's writer keys followed
// by the names' readers' sets, queues and tickets. Their release and extend answer 1 only when
// every name was held.
const LeaseKind kLockSetLease{lock_set_lease_script, lock_set_lease_script,
                              lock_set_release_request, LeaseKind::HeldAt::key_value,
                              lock_set_extend_request};
const LeaseKind kRwWriterSetLease{rw_set_lease_script, rw_set_lease_script, rw_set_release_request,
                                  LeaseKind::HeldAt::key_value, rw_set_extend_request};

}  // namespace

void validate_lock_set_size(std::size_t names) {
  if (names == 0)
    throw Error(make_error_code(errc::invalid_argument), "a lock set needs at least one name");
  if (names > kMaxNames)
    throw Error(make_error_code(errc::invalid_argument),
                "a lock set takes at most " + std::to_string(kMaxNames) + " names, got " +
                    std::to_string(names));
}

LockSetTry::LockSetTry(LockSetKeys keys, std::optional<std::vector<FenceCounters>> fences,
                       std::chrono::milliseconds ttl)
    : keys_(std::move(keys)),
      fences_(std::move(fences)),
      ttl_(ttl),
      id_(LeaseId::generate()),
      holder_(holder_suffix()),
      value_(id_.hex() + holder_) {}

Request LockSetTry::request() const {
  std::vector<std::string_view> keys(keys_.leases.begin(), keys_.leases.end());
  keys.insert(keys.end(), keys_.readers.begin(), keys_.readers.end());
  if (fences_) {
    for (const FenceCounters& counters : *fences_)
      keys.push_back(counters.slot);
    for (const FenceCounters& counters : *fences_)
      keys.push_back(counters.own);
  }
  const DecimalDigits ttl(ttl_.count());
  const DecimalDigits count(static_cast<long long>(keys_.leases.size()));
  const std::string_view args[] = {value_, ttl.view(), count.view()};
  const Script& script = writers() ? rw_set_try_script() : lock_set_try_script();
  return Request::script(script, keys, args).retry_safe().grants_lease();
}

Result<LockSetTried> LockSetTry::parse(const Reply& reply, const Timing& timing) const {
  if (reply.is_error())
    return error_result<LockSetTried>(reply);
  const auto unexpected = [&] {
    return Result<LockSetTried>(make_error_code(errc::unexpected_reply), to_string(reply));
  };
  if (reply.type != Reply::Type::array || reply.elements.size() < 2)
    return unexpected();
  for (const Reply& element : reply.elements) {
    if (element.type != Reply::Type::integer || element.integer < 0)
      return unexpected();
  }
  if (reply.elements[0].integer == 0) {
    const long long busy = reply.elements[1].integer;
    if (busy < 1 || static_cast<std::size_t>(busy) > keys_.leases.size())
      return unexpected();
    return LockSetTried{nullptr, static_cast<std::size_t>(busy - 1)};
  }
  if (reply.elements.size() != keys_.leases.size() + 1)
    return unexpected();
  const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
  if (timing.received >= deadline)
    return granted_too_late<LockSetTried>();
  auto lease = std::make_shared<LeaseState>(keys_.leases.front(), id_, ttl_, deadline,
                                            writers() ? &kRwWriterSetLease : &kLockSetLease,
                                            std::string(), value_);
  lease->more_keys.assign(keys_.leases.begin() + 1, keys_.leases.end());
  for (const auto* more : {&keys_.readers, &keys_.queues, &keys_.tickets})
    lease->more_keys.insert(lease->more_keys.end(), more->begin(), more->end());
  if (fences_) {
    for (std::size_t i = 1; i < reply.elements.size(); ++i)
      lease->fences.push_back(static_cast<std::uint64_t>(reply.elements[i].integer));
    lease->fence = lease->fences.front();
  }
  return LockSetTried{std::move(lease), 0};
}

std::optional<Request> LockSetTry::on_unknown_outcome() const {
  std::vector<std::string_view> keys(keys_.leases.begin(), keys_.leases.end());
  if (!writers())
    return set_lease_request(lock_set_lease_script(), keys, keys.size(), value_, std::nullopt);
  for (const auto* more : {&keys_.readers, &keys_.queues, &keys_.tickets})
    keys.insert(keys.end(), more->begin(), more->end());
  return set_lease_request(rw_set_lease_script(), keys, keys_.leases.size(), value_, std::nullopt);
}

}  // namespace leasehold::detail
