// An Election's queries beyond a Lock's: proclaiming a value, and reading who leads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/detail/watch.hpp"
#include "leasehold/leader.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold {
namespace detail {

// An Election's lease: a Lock's, whose release also tells the election's observers.
extern const LeaseKind kElectionLease;

// election_proclaim.lua: sets the value key to `value` for the lease `lease_value`, if it leads,
// and tells the election's observers.
Request proclaim_request(std::string_view key, std::string_view value_key,
                         std::string_view term_key, std::string_view lease_value,
                         std::string_view value);
// election_leader.lua: the leader's lease value, its time left, the term and the value key.
Request leader_request(std::string_view key, std::string_view term_key, std::string_view value_key);
// That script's reply as the leader, or none; an error reply as its error.
Result<std::optional<Leader>> parse_leader(const Reply& reply);
// An election's state, as its observers see it (watch.hpp), as the leader, or none.
std::optional<Leader> leader_seen(const SeenLease& seen);

template <class E>
class Proclaim {
 public:
  using result_type = bool;
  using effect = Write<E>;

  Proclaim(std::string_view key, std::string_view value_key, std::string_view term_key,
           std::string_view lease_value, std::string_view value)
      : request_(proclaim_request(key, value_key, term_key, lease_value, value)) {}

  const Request& request() const { return request_; }
  Result<bool> parse(const Reply& reply, const Timing&) const { return one_or_zero(reply); }

 private:
  Request request_;
};

template <class E>
class LeaderQuery {
 public:
  using result_type = std::optional<Leader>;
  using effect = Read<E>;

  LeaderQuery(std::string_view key, std::string_view term_key, std::string_view value_key)
      : request_(leader_request(key, term_key, value_key)) {}

  const Request& request() const { return request_; }
  Result<result_type> parse(const Reply& reply, const Timing&) const { return parse_leader(reply); }

 private:
  Request request_;
};

}  // namespace detail
}  // namespace leasehold
