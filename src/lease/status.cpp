#include "leasehold/describe.hpp"

#include "lease_scripts.hpp"
#include "leasehold/detail/fence_counters.hpp"
#include "scripts.hpp"

namespace leasehold::detail {

const Script& lease_status_script() {
  static const Script script{std::string(lua::lease_status)};
  return script;
}

Request StatusKeys::request() const {
  std::string mode;
  std::vector<std::string_view> keys;
  const auto add = [&](char letter, const std::string& key) {
    if (key.empty())
      return;
    mode += letter;
    keys.push_back(key);
  };
  add('s', lease);
  add('z', leases);
  add('q', queue);
  add('f', fence);
  add('f', own_fence);
  add('n', permits);
  const std::string_view args[] = {mode};
  // A single server reads its one counter where a cluster reads the slot's.
  std::optional<FenceCounters> counters;
  if (!fence.empty())
    counters = FenceCounters{fence, own_fence, server_fence};
  return fenced_script(lease_status_script(), keys, args, counters).retry_safe();
}

namespace {

// lease_status.lua's reply: {now, the string key's value, its PTTL, waiters, fence, permits}, then
// the set's members and their scores.
constexpr std::size_t kFixedFields = 6;

LeaseInfo lease_info(LeaseInfo::Kind kind, std::string_view stored, long long ms_left) {
  StoredLease lease = read_stored_lease(stored);
  return LeaseInfo{kind, lease.id_hex.substr(0, 8), std::move(lease.holder),
                   std::chrono::milliseconds(ms_left)};
}

std::optional<std::uint64_t> counter(const Reply& field) {
  if (field.integer < 0)
    return std::nullopt;
  return static_cast<std::uint64_t>(field.integer);
}

// The server's milliseconds (its time, a lease's end) are below this (some 285 000 years): a
// number beyond is not one the script wrote, and would overflow the arithmetic on it.
constexpr long long kMaxServerMs = 1LL << 53;

Result<LeaseStatus> unexpected(const Reply& reply, std::string_view what) {
  return Result<LeaseStatus>(make_error_code(errc::unexpected_reply),
                             "an unexpected " + std::string(what) +
                                 " in a reply to a lease's status: " + to_string(reply));
}

}  // namespace

Result<LeaseStatus> StatusKeys::parse(const Reply& reply) const {
  if (reply.is_error())
    return error_result<LeaseStatus>(reply);
  const auto& e = reply.elements;
  bool well_formed = reply.type == Reply::Type::array && e.size() >= kFixedFields &&
                     (e.size() - kFixedFields) % 2 == 0 && e[1].type == Reply::Type::string;
  for (const std::size_t integer : {0, 2, 3, 4, 5})
    well_formed = well_formed && e[integer].type == Reply::Type::integer;
  if (!well_formed)
    return unexpected(reply, "shape");
  LeaseStatus status;
  if (!e[1].str.empty())
    status.leases.push_back(lease_info(LeaseInfo::Kind::exclusive, e[1].str, e[2].integer));
  status.waiters = static_cast<std::uint64_t>(std::max(0LL, e[3].integer));
  status.fence = counter(e[4]);
  status.permits = counter(e[5]);
  const long long now = e[0].integer;
  if (e.size() > kFixedFields && (now < -kMaxServerMs || now > kMaxServerMs))
    return unexpected(reply, "time");
  for (std::size_t i = kFixedFields; i + 1 < e.size(); i += 2) {
    double end = 0;
    try {
      end = std::stod(e[i + 1].str);
    } catch (const std::exception&) {
      return unexpected(reply, "score");
    }
    // Not NaN, not infinite, within the server's milliseconds.
    if (!(end >= -static_cast<double>(kMaxServerMs) && end <= static_cast<double>(kMaxServerMs)))
      return unexpected(reply, "score");
    status.leases.push_back(lease_info(set_kind, e[i].str, static_cast<long long>(end) - now));
  }
  return status;
}

const Script& key_types_script() {
  static const Script script{std::string(lua::key_types)};
  return script;
}

}  // namespace leasehold::detail

namespace leasehold {

Request FindForeignKeys::request() const {
  std::vector<std::string_view> keys;
  keys.reserve(keys_.size());
  for (const LeaseKey& key : keys_)
    keys.push_back(key.key);
  return Request::script(detail::key_types_script(), keys, {}).retry_safe();
}

Result<std::vector<ForeignKey>> FindForeignKeys::parse(const Reply& reply, const Timing&) const {
  using Found = std::vector<ForeignKey>;
  if (reply.is_error())
    return error_result<Found>(reply);
  if (reply.type != Reply::Type::array || reply.elements.size() != keys_.size())
    return Result<Found>(make_error_code(errc::unexpected_reply),
                         "an unexpected reply to a check of key types: " + to_string(reply));
  Found found;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const std::string& type = reply.elements[i].str;
    if (type != "none" && type != keys_[i].type)
      found.push_back({keys_[i], type});
  }
  return found;
}

}  // namespace leasehold
