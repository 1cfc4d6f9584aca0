#include "leasehold/detail/fence_counters.hpp"

#include <vector>

namespace leasehold::detail {

Request counted_per_topology(Request cluster, const Script& script,
                             std::span<const std::string_view> keys,
                             std::span<const std::string_view> args,
                             std::span<const FenceCounters> fences) {
  std::vector<std::string_view> server_keys(keys.begin(), keys.end());
  bool replaced = false;
  for (std::string_view& key : server_keys) {
    for (const FenceCounters& counters : fences) {
      if (!counters.server.empty() && key == counters.slot) {
        key = counters.server;
        replaced = true;
        break;
      }
    }
  }
  if (!replaced)
    return cluster;
  return Request::script(script, server_keys, args).on_cluster_as(std::move(cluster));
}

Request fenced_script(const Script& script, std::span<const std::string_view> keys,
                      std::span<const std::string_view> args,
                      const std::optional<FenceCounters>& fence) {
  Request call = Request::script(script, keys, args);
  if (!fence)
    return call;
  return counted_per_topology(std::move(call), script, keys, args, std::span(&*fence, 1));
}

}  // namespace leasehold::detail
