// The pure parts of speaking to a Redis Cluster: redirections and the slot map. No sockets;
// unit-tested in tests/unit/cluster_protocol_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/reply.hpp"
#include "leasehold/url.hpp"

namespace leasehold::detail {

// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 [::1]:6381": the slot and where it is now. An empty
// host means the host of the node that answered. False if the message is malformed.
bool parse_redirection(std::string_view message, std::uint16_t& slot, RedisUrl::Endpoint& endpoint,
                       std::string_view replying_host);

struct SlotRange {
  std::size_t first = 0;
  std::size_t last = 0;
  RedisUrl::Endpoint master;
};

// A CLUSTER SLOTS reply ([[first, last, [host, port, id...], replicas...]...]) as ranges. An empty
// or '?' host is the node that was asked (`asked_host`). False if malformed or empty.
bool parse_slot_map(const Reply& slots, const std::string& asked_host,
                    std::vector<SlotRange>& ranges);

}  // namespace leasehold::detail
