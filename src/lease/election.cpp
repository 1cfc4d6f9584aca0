#include "leasehold/election.hpp"

#include "lease_scripts.hpp"
#include "scripts.hpp"

namespace leasehold::detail {

// The scripts' contracts are in src/lease/scripts/.

namespace {
Request election_lease_release_request(const LeaseState& state) {
  return lock_release_request(state.key, state.value, true);
}
}  // namespace

const LeaseKind kElectionLease{lock_release_script, lock_extend_script,
                               election_lease_release_request};

Request proclaim_request(std::string_view key, std::string_view value_key,
                         std::string_view term_key, std::string_view lease_value,
                         std::string_view value) {
  static const Script script{std::string(lua::election_proclaim)};
  const std::string observed = observed_key(key);
  const std::string changed = changed_channel(key);
  const std::string_view keys[] = {key, value_key, term_key, observed};
  const std::string_view args[] = {lease_value, value, changed};
  return Request::script(script, keys, args).retry_safe();
}

Request leader_request(std::string_view key, std::string_view term_key,
                       std::string_view value_key) {
  static const Script script{std::string(lua::election_leader)};
  const std::string_view keys[] = {key, term_key, value_key};
  return Request::script(script, keys, {}).retry_safe();
}

Result<std::optional<Leader>> parse_leader(const Reply& reply) {
  using Outcome = Result<std::optional<Leader>>;
  if (reply.is_error())
    return error_result<std::optional<Leader>>(reply);
  if (reply.is_nil())
    return std::optional<Leader>();
  const auto& e = reply.elements;
  const bool well_formed = reply.type == Reply::Type::array && e.size() == 4 &&
                           e[0].type == Reply::Type::string && e[1].type == Reply::Type::integer &&
                           e[2].type == Reply::Type::integer && e[2].integer >= 0 &&
                           (e[3].is_nil() || e[3].type == Reply::Type::string);
  if (!well_formed)
    return Outcome(make_error_code(errc::unexpected_reply),
                   "an unexpected reply to a leader query: " + to_string(reply));
  const StoredLease lease = read_stored_lease(e[0].str);
  Leader leader;
  leader.id_prefix = lease.id_hex.substr(0, 8);
  leader.holder = lease.holder;
  leader.time_left = std::chrono::milliseconds(e[1].integer);
  leader.term = static_cast<std::uint64_t>(e[2].integer);
  if (!e[3].is_nil())
    leader.value = e[3].str;
  return std::optional<Leader>(std::move(leader));
}

std::optional<Leader> leader_seen(const SeenLease& seen) {
  if (seen.lease.empty())
    return std::nullopt;
  const StoredLease lease = read_stored_lease(seen.lease);
  Leader leader;
  leader.id_prefix = lease.id_hex.substr(0, 8);
  leader.holder = lease.holder;
  leader.time_left = seen.time_left;
  leader.term = seen.term;
  leader.value = seen.proclaimed;
  return leader;
}

}  // namespace leasehold::detail
