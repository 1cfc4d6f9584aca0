// Where a fenced kind's grant counts its fencing numbers (src/lease/scripts/fence_grant.lua).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "leasehold/slot.hpp"

namespace leasehold::detail {

// The counter of the lease key's hash slot, shared by every fenced name of the prefix in that
// slot, and the name's own counter of the per-name layout, which grants move into it (empty:
// none; an Election's term counts per name).
struct FenceCounters {
  std::string slot;
  std::string own;
};

// "<prefix>:Fences{<tag of the slot of lease_key>}" (docs/keys.md, "Fence counters").
inline std::string fence_counter_key(std::string_view prefix, std::string_view lease_key) {
  std::string base;
  base.reserve(prefix.size() + 7);
  base.append(prefix).append(":Fences");
  return per_slot_key(base, lease_key);
}

inline FenceCounters fence_counters(std::string_view prefix, std::string_view lease_key,
                                    std::string own) {
  return {fence_counter_key(prefix, lease_key), std::move(own)};
}

}  // namespace leasehold::detail
