// describe(): who holds a name now, for an application's own admin pages.
//
//   for (const leasehold::LeaseInfo& lease : redis.process(leasehold::describe(invoices, 42)))
//     if (lease.holder)
//       show(lease.holder->host, lease.holder->pid, lease.holder->label, lease.time_left);
//
// One read-only script call: a Lock's holder, an RwLock's writer and live readers, a Semaphore's
// live permits, each with how long its lease has left (by the server's clock) and its holder's
// identity when it was taken with one (holder.hpp). Ids are shown by their first 8 hex digits
// only: a whole id is the proof of holding.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "leasehold/holder.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"

namespace leasehold {

struct LeaseInfo {
  enum class Kind { exclusive, shared, permit };
  Kind kind = Kind::exclusive;
  std::string id_prefix;  // the first 8 hex digits of the lease's id
  std::optional<Holder> holder;
  std::chrono::milliseconds time_left{0};
};

namespace detail {
const Script& describe_script();
// describe_script()'s reply as leases: the string key's as exclusive, the sorted set's members
// as `shared_kind`.
Result<std::vector<LeaseInfo>> describe_leases(const Reply& reply, LeaseInfo::Kind shared_kind);
}  // namespace detail

// A query yielding std::vector<LeaseInfo>: the leases that hold a name now.
template <class L>
class Describe {
 public:
  using result_type = std::vector<LeaseInfo>;
  using effect = Read<L>;

  // `string_key`: a key holding one lease's value (or empty); `set_key`: a sorted set of leases
  // scored by their end in server ms (or empty); `set_kind`: what its members are.
  Describe(std::string string_key, std::string set_key, LeaseInfo::Kind set_kind)
      : string_key_(std::move(string_key)), set_key_(std::move(set_key)), set_kind_(set_kind) {}

  Request request() const {
    const std::string_view mode = string_key_.empty() ? "z" : set_key_.empty() ? "s" : "sz";
    std::vector<std::string_view> keys;
    if (!string_key_.empty())
      keys.push_back(string_key_);
    if (!set_key_.empty())
      keys.push_back(set_key_);
    const std::string_view args[] = {mode};
    return Request::script(detail::describe_script(), keys, args).retry_safe();
  }

  Result<result_type> parse(const Reply& reply, const Timing&) const {
    return detail::describe_leases(reply, set_kind_);
  }

 private:
  std::string string_key_;
  std::string set_key_;
  LeaseInfo::Kind set_kind_;
};

template <LockNameType N>
Describe<Lock<N>> describe(const Lock<N>& lock, const N& name) {
  return Describe<Lock<N>>(lock.key(name), {}, LeaseInfo::Kind::exclusive);
}
template <LockNameType N>
Describe<RwLock<N>> describe(const RwLock<N>& lock, const N& name) {
  return Describe<RwLock<N>>(lock.writer_key(name), lock.readers_key(name),
                             LeaseInfo::Kind::shared);
}
template <LockNameType N>
Describe<Semaphore<N>> describe(const Semaphore<N>& semaphore, const N& name) {
  return Describe<Semaphore<N>>({}, semaphore.holders_key(name), LeaseInfo::Kind::permit);
}

}  // namespace leasehold
