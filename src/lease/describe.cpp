#include "leasehold/describe.hpp"

#include "lease_scripts.hpp"

namespace leasehold::detail {

const Script& describe_script() {
  static const Script script{std::string(lua::describe)};
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
