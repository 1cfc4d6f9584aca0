#include "leasehold/describe.hpp"

namespace leasehold::detail {

// KEYS: a string key of one lease (mode has 's'), then a sorted set of leases scored by their
// end in server ms (mode has 'z'); ARGV[1] mode -> {server ms now, the string key's value ('' if
// none), its PTTL, then each live member of the set and its score}. Reads only.
const Script& describe_script() {
  static const Script script(
      "local time = redis.call('TIME')\n"
      "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
      "local reply = {now, '', -2}\n"
      "local set = 1\n"
      "if string.find(ARGV[1], 's', 1, true) then\n"
      "  reply[2] = redis.call('GET', KEYS[1]) or ''\n"
      "  reply[3] = redis.call('PTTL', KEYS[1])\n"
      "  set = 2\n"
      "end\n"
      "if string.find(ARGV[1], 'z', 1, true) then\n"
      "  local members = redis.call('ZRANGEBYSCORE', KEYS[set], '(' .. now, '+inf', 'WITHSCORES')\n"
      "  for _, field in ipairs(members) do reply[#reply + 1] = field end\n"
      "end\n"
      "return reply\n");
  return script;
}

namespace {

LeaseInfo lease_info(LeaseInfo::Kind kind, std::string_view stored, long long ms_left) {
  StoredLease lease = read_stored_lease(stored);
  return LeaseInfo{kind, lease.id_hex.substr(0, 8), std::move(lease.holder),
                   std::chrono::milliseconds(ms_left)};
}

}  // namespace

Result<std::vector<LeaseInfo>> describe_leases(const Reply& reply, LeaseInfo::Kind shared_kind) {
  using Leases = std::vector<LeaseInfo>;
  if (reply.is_error())
    return error_result<Leases>(reply);
  const auto& e = reply.elements;
  const bool well_formed = reply.type == Reply::Type::array && e.size() >= 3 && e.size() % 2 == 1 &&
                           e[0].type == Reply::Type::integer && e[2].type == Reply::Type::integer;
  if (!well_formed)
    return Result<Leases>(make_error_code(errc::unexpected_reply),
                          "an unexpected reply to describe: " + to_string(reply));
  Leases leases;
  if (!e[1].str.empty())
    leases.push_back(lease_info(LeaseInfo::Kind::exclusive, e[1].str, e[2].integer));
  const long long now = e[0].integer;
  for (std::size_t i = 3; i + 1 < e.size(); i += 2) {
    long long end = 0;
    try {
      end = static_cast<long long>(std::stod(e[i + 1].str));
    } catch (const std::exception&) {
      return Result<Leases>(make_error_code(errc::unexpected_reply),
                            "an unexpected score in a reply to describe: " + to_string(reply));
    }
    leases.push_back(lease_info(shared_kind, e[i].str, end - now));
  }
  return leases;
}

}  // namespace leasehold::detail
