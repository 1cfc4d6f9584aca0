// The operations a connection wraps around or adds to its callers': each is an Operation the
// pipeline queues like any other, so the pipeline itself knows nothing of scripts, replicas or
// eviction policies.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "leasehold/detail/operation.hpp"

namespace leasehold::detail {

// The script calls of `original` that Redis answered NOSCRIPT (its noscript_replies), sent again
// as EVAL, which caches the script again; their replies go to `original`, which then completes.
// `as_eval` makes a call's EVAL (the pipeline's: a Redis 6 form's, when the server gets those).
std::unique_ptr<Operation> resend_as_eval(std::unique_ptr<Operation> original,
                                          const std::function<Request(const Request&)>& as_eval);

// True if the operation takes or extends a lease (ClientOptions::replica_acks applies to it).
bool grants_leases(const Operation& operation);
// ClientOptions::replica_acks: the operation's lease grants count only once WAIT says that
// `replicas` replicas have them within `timeout`; else they fail with errc::not_replicated.
// With `every_replica` (ClientOptions::safe_failover), at least every replica the transport
// knows of when the grants' replies came (Transport::replicas_known()); none known and
// `replicas` 0: the grants fail, as nothing says they are safe.
std::unique_ptr<Operation> with_replica_acks(std::unique_ptr<Operation> operation, int replicas,
                                             std::chrono::milliseconds timeout,
                                             bool every_replica = false);

// INFO memory, and a warning through the log hook when the server at `address` may evict keys.
std::unique_ptr<Operation> eviction_policy_check(std::string address);

}  // namespace leasehold::detail
