// Who holds a name now, for an application's own admin pages and for status tools.
//
//   for (const leasehold::LeaseInfo& lease : redis.process(leasehold::describe(invoices, 42)))
//     if (lease.holder)
//       show(lease.holder->host, lease.holder->pid, lease.holder->label, lease.time_left);
//
//   // Several names and kinds in one round trip (one per node on a cluster):
//   std::vector<leasehold::LeaseStatusQuery<>> batch{leasehold::lease_status(invoices, 42),
//                                                     leasehold::lease_status(catalog, "books")};
//   for (const auto& status : redis.process(batch))
//     if (status) show(status->leases.size(), status->waiters, status->fence);
//
// Each is one read-only script call: a Lock's holder, an RwLock's writer and live readers, a
// Semaphore's live permits, each with how long its lease has left (by the server's clock) and its
// holder's identity when it was taken with one (holder.hpp). lease_status() adds what surrounds
// them: how many wait in turn, the last fencing number, a Semaphore's count of permits. Ids are
// shown by their first 8 hex digits only: a whole id is the proof of holding.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "leasehold/detail/describe.hpp"
#include "leasehold/election.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/lease_info.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/raw_lock.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"

namespace leasehold {

// A query yielding LeaseStatus. LeaseStatusQuery<> (of any kind) is made from any kind's, so that
// a batch reads several kinds in one round trip; it counts as a read of anything (capability.hpp).
template <class L = void>
class LeaseStatusQuery {
 public:
  using result_type = LeaseStatus;
  using effect = Read<L>;

  explicit LeaseStatusQuery(detail::StatusKeys keys) : keys_(std::move(keys)) {}
  template <class Kind>
  requires(std::is_void_v<L> && !std::is_void_v<Kind>)
      LeaseStatusQuery(const LeaseStatusQuery<Kind>& kind)
      : keys_(kind.keys()) {}

  Request request() const { return keys_.request(); }
  Result<result_type> parse(const Reply& reply, const Timing&) const { return keys_.parse(reply); }
  const detail::StatusKeys& keys() const noexcept { return keys_; }

 private:
  detail::StatusKeys keys_;
};

template <LockNameType N>
LeaseStatusQuery<Lock<N>> lease_status(const Lock<N>& lock, const N& name) {
  const std::string key = lock.key(name);
  return LeaseStatusQuery<Lock<N>>(
      {key,
       {},
       LeaseInfo::Kind::exclusive,
       detail::queue_key(key),
       lock.fencing() ? lock.fence_counter_key(name) : std::string(),
       lock.fencing() ? lock.own_fence_key(name) : std::string(),
       {},
       lock.fencing() ? lock.server_fence_counter_key() : std::string()});
}
template <LockNameType N>
LeaseStatusQuery<RwLock<N>> lease_status(const RwLock<N>& lock, const N& name) {
  return LeaseStatusQuery<RwLock<N>>(
      {lock.writer_key(name),
       lock.readers_key(name),
       LeaseInfo::Kind::shared,
       detail::queue_key(lock.writer_key(name)),
       lock.fencing() ? lock.fence_counter_key(name) : std::string(),
       lock.fencing() ? lock.own_fence_key(name) : std::string(),
       {},
       lock.fencing() ? lock.server_fence_counter_key() : std::string()});
}
template <LockNameType N>
LeaseStatusQuery<Semaphore<N>> lease_status(const Semaphore<N>& semaphore, const N& name) {
  const std::string holders = semaphore.holders_key(name);
  return LeaseStatusQuery<Semaphore<N>>(
      {{},
       holders,
       LeaseInfo::Kind::permit,
       detail::queue_key(holders),
       semaphore.fencing() ? semaphore.fence_counter_key(name) : std::string(),
       semaphore.fencing() ? semaphore.own_fence_key(name) : std::string(),
       semaphore.count_key(name),
       semaphore.fencing() ? semaphore.server_fence_counter_key() : std::string()});
}
// A raw key: its one holder, whoever set it (a foreign value is shown by its first 8
// characters); it has no queue and no fence. Throws Error(errc::invalid_argument) for an empty key.
inline LeaseStatusQuery<RawLock> lease_status(const RawLock&, std::string_view key) {
  RawLock::validate_key(key);
  return LeaseStatusQuery<RawLock>(
      {std::string(key), {}, LeaseInfo::Kind::exclusive, {}, {}, {}, {}, {}});
}

// A query yielding std::vector<LeaseInfo>: the leases that hold a name now (lease_status()'s
// leases alone: it reads no queue, fence or count).
template <class L>
class Describe {
 public:
  using result_type = std::vector<LeaseInfo>;
  using effect = Read<L>;

  explicit Describe(const LeaseStatusQuery<L>& status) : status_(leases_only(status.keys())) {}

  Request request() const { return status_.request(); }
  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    Result<LeaseStatus> status = status_.parse(reply, timing);
    if (!status)
      return Result<result_type>(status.error(), status.detail());
    return std::move(status.value().leases);
  }

 private:
  static detail::StatusKeys leases_only(detail::StatusKeys keys) {
    keys.queue.clear();
    keys.fence.clear();
    keys.own_fence.clear();
    keys.permits.clear();
    keys.server_fence.clear();
    return keys;
  }

  LeaseStatusQuery<L> status_;
};

template <LockNameType N>
Describe<Lock<N>> describe(const Lock<N>& lock, const N& name) {
  return Describe<Lock<N>>(lease_status(lock, name));
}
template <LockNameType N>
Describe<RwLock<N>> describe(const RwLock<N>& lock, const N& name) {
  return Describe<RwLock<N>>(lease_status(lock, name));
}
template <LockNameType N>
Describe<Semaphore<N>> describe(const Semaphore<N>& semaphore, const N& name) {
  return Describe<Semaphore<N>>(lease_status(semaphore, name));
}

// A key leasehold keeps for a name, and the type of value it keeps there ("string", "zset").
struct LeaseKey {
  std::string key;
  std::string_view type;
};

// Every key a kind keeps for a name (docs/keys.md): its leases', its queue's and its fencing
// counters' (whether or not it is fenced: a counter outlives a change of mind): the slot's and
// the name's own. One hash slot: a single server's one counter (server_fence_counter_key()),
// every fenced name's, is not among them.
template <LockNameType N>
std::vector<LeaseKey> lease_keys(const Lock<N>& lock, const N& name) {
  const std::string key = lock.key(name);
  return {{key, "string"},
          {detail::queue_key(key), "zset"},
          {detail::tickets_key(key), "zset"},
          {lock.fence_counter_key(name), "string"},
          {lock.own_fence_key(name), "string"}};
}
template <LockNameType N>
std::vector<LeaseKey> lease_keys(const RwLock<N>& lock, const N& name) {
  const std::string writer = lock.writer_key(name);
  return {{writer, "string"},
          {lock.readers_key(name), "zset"},
          {lock.intent_key(name), "string"},
          {lock.fence_counter_key(name), "string"},
          {lock.own_fence_key(name), "string"},
          {detail::queue_key(writer), "zset"},
          {detail::tickets_key(writer), "zset"}};
}
template <LockNameType N>
std::vector<LeaseKey> lease_keys(const Semaphore<N>& semaphore, const N& name) {
  const std::string holders = semaphore.holders_key(name);
  return {{holders, "zset"},
          {semaphore.count_key(name), "string"},
          {semaphore.fence_counter_key(name), "string"},
          {semaphore.own_fence_key(name), "string"},
          {detail::queue_key(holders), "zset"},
          {detail::tickets_key(holders), "zset"}};
}

template <LockNameType N>
std::vector<LeaseKey> lease_keys(const Election<N>& election, const N& name) {
  const std::string leader = election.key(name);
  return {{leader, "string"},
          {election.term_key(name), "string"},
          {election.value_key(name), "string"},
          {detail::queue_key(leader), "zset"},
          {detail::tickets_key(leader), "zset"}};
}

// A key among a name's that holds another type of value than leasehold keeps there: something
// else wrote it, and the name's queries fail with errc::wrong_type until it is removed.
struct ForeignKey {
  LeaseKey expected;
  std::string type;  // what it holds, as TYPE names it ("hash", "list", …)
};

// A query yielding std::vector<ForeignKey>: those of `keys` (of one hash slot, as lease_keys()
// gives them) that hold another type of value. One read-only script call.
class FindForeignKeys {
 public:
  using result_type = std::vector<ForeignKey>;
  using effect = Read<void>;

  explicit FindForeignKeys(std::vector<LeaseKey> keys) : keys_(std::move(keys)) {}

  Request request() const;
  Result<result_type> parse(const Reply& reply, const Timing&) const;

 private:
  std::vector<LeaseKey> keys_;
};

inline FindForeignKeys foreign_keys(std::vector<LeaseKey> keys) {
  return FindForeignKeys(std::move(keys));
}

}  // namespace leasehold
