// Where a fenced kind's grant counts its fencing numbers (src/lease/scripts/fence_grant.lua).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "leasehold/request.hpp"
#include "leasehold/slot.hpp"

namespace leasehold::detail {

// The counters a grant may count on: on a Redis Cluster the counter of the lease key's hash slot,
// shared by every fenced name of the prefix in that slot; on a single server the server's one
// counter of the prefix (empty: the same counter on both, as an Election's term key); and the
// name's own counter of the per-name layout, which grants move into them (empty: none).
struct FenceCounters {
  std::string slot;
  std::string own;
  std::string server;
};

// "<prefix>:Fences{<tag of the slot of lease_key>}" (docs/keys.md, "Fence counters").
inline std::string fence_counter_key(std::string_view prefix, std::string_view lease_key) {
  std::string base;
  base.reserve(prefix.size() + 7);
  base.append(prefix).append(":Fences");
  return per_slot_key(base, lease_key);
}

// "<prefix>:Fences": a single server's one counter.
inline std::string server_fence_counter_key(std::string_view prefix) {
  return std::string(prefix).append(":Fences");
}

inline FenceCounters fence_counters(std::string_view prefix, std::string_view lease_key,
                                    std::string own) {
  return {fence_counter_key(prefix, lease_key), std::move(own), server_fence_counter_key(prefix)};
}

// `cluster`, a call of `script` with `keys` and `args` that counts fences on the slot counters
// of `fences`, in the form of each topology: a single server runs the same call with each of
// those slot counters among `keys` replaced by its server counter, and a cluster `cluster`
// (Request::on_cluster_as). `cluster` itself when no key is replaced.
Request counted_per_topology(Request cluster, const Script& script,
                             std::span<const std::string_view> keys,
                             std::span<const std::string_view> args,
                             std::span<const FenceCounters> fences);

// A call of `script` that counts a fence on `fence`'s counters (none: an unfenced call), in the
// form of each topology (counted_per_topology).
Request fenced_script(const Script& script, std::span<const std::string_view> keys,
                      std::span<const std::string_view> args,
                      const std::optional<FenceCounters>& fence);

}  // namespace leasehold::detail
