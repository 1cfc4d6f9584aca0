// The keys a status read takes, and its script's request and reply (describe.hpp).
#pragma once

#include <string>

#include "leasehold/error.hpp"
#include "leasehold/lease_info.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

// The keys a status reads, each empty when the kind has none.
struct StatusKeys {
  std::string lease;   // a string key holding one lease
  std::string leases;  // a sorted set of leases scored by their end in server ms
  LeaseInfo::Kind set_kind = LeaseInfo::Kind::shared;  // what the set's members are
  std::string queue;
  std::string fence;      // the fence counter of the name's slot (a Redis Cluster's)
  std::string own_fence;  // the name's own counter of the per-name layout, until it expires
  std::string permits;
  std::string server_fence;  // a single server's one fence counter (with `fence`)

  Request request() const;
  Result<LeaseStatus> parse(const Reply& reply) const;
};

}  // namespace leasehold::detail
