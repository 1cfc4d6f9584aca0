// Fences checked where the data lives, for state kept in Redis: a write that is done only when
// the fencing number it presents is not older than the newest one its resource has seen, which
// it then records (docs/fencing.md). A holder overtaken by another — its lease ran out while it
// stalled — then cannot write after the one that overtook it, whatever its clock did.
//
//   auto verdict = redis.process(leasehold::fenced_set("report:latest", body, *token->fence()));
//   if (!verdict.accepted) { /* a newer holder (fence verdict.newest) wrote first: give up */ }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/lock.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold {

// What a fenced write found.
struct FenceVerdict {
  // The fence was the newest seen, or equal to it: the write was done and the fence recorded.
  bool accepted = false;
  // The newest fence seen now: the one presented when accepted, the one that refused it if not.
  std::uint64_t newest = 0;

  friend bool operator==(const FenceVerdict&, const FenceVerdict&) = default;
};

// A fenced write's query (yields FenceVerdict); made by the functions below.
class FencedWrite {
 public:
  using result_type = FenceVerdict;
  using effect = Write<Command>;

  explicit FencedWrite(Request request) : request_(std::move(request)) {}
  const Request& request() const noexcept { return request_; }
  Result<FenceVerdict> parse(Reply reply, const Timing&) const;

 private:
  Request request_;
};

// Where fenced_set() keeps the fence of `key`: "<key>:fence", in the slot of `key` (slot.hpp).
std::string fence_record_key(std::string_view key);

// SET key value, if `fence` is not older than the one recorded for `key`
// (fence_record_key(key)); records it.
FencedWrite fenced_set(std::string_view key, std::string_view value, std::uint64_t fence);

// HSET key field value ..., if `fence` is not older than the hash's own `fence_field`; sets that
// field to `fence` with the others: the record carries its fence, as a row would.
FencedWrite fenced_hset(std::string_view key, std::uint64_t fence,
                        const std::vector<std::pair<std::string, std::string>>& fields,
                        std::string_view fence_field = "fence");

// Fence records of resources that have no data in Redis (a deploy target, a file, an outside
// system): a check records a fence for a resource if it is not older than the newest recorded,
// and says whether it was. `leasehold fence check` runs it.
class FenceRecords {
 public:
  explicit FenceRecords(std::string_view prefix = kDefaultPrefix) : prefix_(prefix) {
    detail::validate_prefix(prefix);
  }

  // "<prefix>:Fence:<resource>". Throws Error(errc::invalid_argument) for an empty resource.
  std::string key(std::string_view resource) const;
  FencedWrite check(std::string_view resource, std::uint64_t fence) const;

 private:
  std::string prefix_;  // a copy: records are made at run time, from any string
};

}  // namespace leasehold
