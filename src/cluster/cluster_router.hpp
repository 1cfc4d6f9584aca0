// The decisions of a Redis Cluster client, without I/O: which node serves each request of a call
// (the slot map, grouping by node), what a node's answer means (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN, a failed connection, a CLUSTER SLOTS reply), which nodes to ask for the map and
// how to learn a raw command's keys. No sockets, timers or threads: ClusterConnection
// (src/cluster_connection.cpp) hands it replies, errors and times, and carries out what it returns.
// Unit-tested in tests/unit/cluster_router_test.cpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cluster_protocol.hpp"
#include "leasehold/clock.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"
#include "leasehold/slot.hpp"
#include "leasehold/url.hpp"

#include "failure.hpp"

namespace leasehold::detail {

// More redirections than this for one request means the cluster's view keeps changing under us.
inline constexpr int kMaxRedirections = 16;
// How long a request waits before it is routed again after TRYAGAIN (its keys' slot is being
// moved) or CLUSTERDOWN (the cluster has no quorum, or a slot has no master).
inline constexpr std::chrono::milliseconds kTryAgainDelay{25};
inline constexpr std::chrono::milliseconds kClusterDownDelay{100};

using ClusterFailure = Failure;

// What one node's answer to one routed request means.
struct ReplyVerdict {
  enum class Action : std::uint8_t {
    deliver,      // the caller's reply: a value, or an error of its own
    follow,       // MOVED: `slot` is served by `target` now; send the request there
    ask,          // ASK: send ASKING and the request to `target`, this once
    retry_later,  // TRYAGAIN, CLUSTERDOWN: the command did not run; route it again after `delay`
    fail,         // the whole call fails with `failure`
  };
  Action action = Action::deliver;
  bool refresh_map = false;  // ask the cluster for its slot map soon (MOVED, CLUSTERDOWN)
  std::uint16_t slot = 0;
  RedisUrl::Endpoint target;
  std::chrono::milliseconds delay{0};
  ClusterFailure failure;
};

// What judge_reply needs to know besides the reply.
struct ReplyContext {
  std::string_view node_address;     // the node that answered, for messages
  std::string_view node_host;        // its host: a redirection with an empty host means it
  std::string_view cluster_address;  // the cluster's URL address, for messages
  int redirections = 0;              // of the call so far
  Clock::time_point now;
  Clock::time_point deadline;  // the call's
};

ReplyVerdict judge_reply(const Reply& reply, const ReplyContext& context);

// What to do with a call (or part of one) that a node's connection completed with an error.
struct NodeErrorVerdict {
  enum class Action : std::uint8_t {
    route_again,  // the node left the cluster with requests it never sent, or that may run
                  // twice: route them again
    fail,         // the call fails with that error
  };
  Action action = Action::fail;
  bool refresh_map = false;  // the node may be gone: ask for the slot map soon
};

NodeErrorVerdict judge_node_error(std::error_code error);

// What one node's answer to CLUSTER SLOTS means for the client.
struct SlotsVerdict {
  enum class Action : std::uint8_t {
    apply,   // a slot map: `ranges`
    failed,  // no map from this node (`failure`); others may answer, or the next refresh
    fatal,   // no node will ever serve this client (`failure`): a refused password or
             // certificate, the same for every node, or a server that is not a cluster node
  };
  Action action = Action::failed;
  std::vector<SlotRange> ranges;
  ClusterFailure failure;
};

// `error`, `detail` and `replies` as the node's connection completed the CLUSTER SLOTS call.
SlotsVerdict judge_slots_reply(const RedisUrl::Endpoint& asked, std::error_code error,
                               std::string detail, const std::vector<Reply>& replies);

// The nodes to ask for the slot map: every master, and the seeds as well until a map was had,
// after a refresh that failed, or when no master is known. Each once.
std::vector<RedisUrl::Endpoint> slot_map_sources(std::vector<RedisUrl::Endpoint> masters,
                                                 const std::vector<RedisUrl::Endpoint>& seeds,
                                                 bool has_map, bool last_refresh_failed);

// A raw command does not declare its keys: the server says which of its arguments are keys
// (COMMAND GETKEYS, with every command's own key rules). The lookups for the requests whose keys
// are unknown; `unknown` gets their indices, in the lookups' order.
std::vector<Request> key_lookups(std::span<const Request> requests,
                                 std::span<const Request::Keys> keys,
                                 std::vector<std::size_t>& unknown);

// The lookups' replies into the requests' keys and slots. A request whose lookup failed (no key
// arguments, an unknown command, a wrong arity) has no keys: any node will do, and answers it
// with its own error if there is one.
void apply_key_lookups(std::span<const std::size_t> unknown, std::span<const Reply> replies,
                       std::span<Request::Keys> keys, std::span<std::uint16_t> slots);

// The failures the router reports itself, as sentences.
ClusterFailure cross_slot_failure(std::size_t index, std::string_view cluster_address);
ClusterFailure unserved_failure(std::string_view cluster_address,
                                std::chrono::milliseconds command_timeout,
                                const ClusterFailure& last_refresh_failure);

// Which requests go to which node: the owner of every slot, from the last CLUSTER SLOTS and the
// MOVED redirections since, and the masters, in turn, for requests without keys. `Node` is the
// caller's (ClusterConnection's node: an endpoint and its connection); the map holds pointers to
// them.
template <class Node>
class SlotMap {
 public:
  // The requests of a call, by node; `unrouted` wait for a node to serve their slot. With
  // `cross_slot`, the call is refused before anything of it is sent.
  struct Plan {
    std::optional<std::size_t> cross_slot;
    std::map<Node*, std::vector<std::size_t>> by_node;
    std::vector<std::size_t> unrouted;
  };

  SlotMap() : owner_(kClusterSlots, nullptr) {}

  Node* owner(std::uint16_t slot) const noexcept { return owner_[slot]; }
  void set_owner(std::uint16_t slot, Node& node) noexcept { owner_[slot] = &node; }

  // A new map: `node_for(endpoint)` gives (or makes) the node of each range's master.
  template <class NodeFor>
  void assign(const std::vector<SlotRange>& ranges, NodeFor&& node_for) {
    std::vector<Node*> owner(kClusterSlots, nullptr);
    std::vector<Node*> masters;
    for (const SlotRange& range : ranges) {
      Node& node = node_for(range.master);
      for (std::size_t slot = range.first; slot <= range.last; ++slot)
        owner[slot] = &node;
      if (!is_in(masters, &node))
        masters.push_back(&node);
    }
    owner_ = std::move(owner);
    masters_ = std::move(masters);
  }

  // No node serves anything (the client is closed, or fails for good).
  void clear() noexcept {
    std::fill(owner_.begin(), owner_.end(), nullptr);
    masters_.clear();
  }

  const std::vector<Node*>& masters() const noexcept { return masters_; }
  bool is_master(const Node* node) const noexcept { return is_in(masters_, node); }

  // The masters in turn; null if none is known.
  Node* next_master() noexcept {
    if (masters_.empty())
      return nullptr;
    return masters_[next_master_++ % masters_.size()];
  }

  // Where the requests `indices` of a call go, by their keys and slots.
  Plan plan(std::span<const Request::Keys> keys, std::span<const std::uint16_t> slots,
            const std::vector<std::size_t>& indices) {
    Plan plan;
    for (std::size_t i : indices) {
      if (keys[i] == Request::Keys::cross_slot) {
        plan.cross_slot = i;
        return plan;
      }
    }
    for (std::size_t i : indices) {
      Node* node = keys[i] == Request::Keys::one_slot ? owner_[slots[i]] : next_master();
      if (node == nullptr)
        plan.unrouted.push_back(i);
      else
        plan.by_node[node].push_back(i);
    }
    return plan;
  }

 private:
  static bool is_in(const std::vector<Node*>& nodes, const Node* node) noexcept {
    for (const Node* candidate : nodes) {
      if (candidate == node)
        return true;
    }
    return false;
  }

  std::vector<Node*> owner_;  // kClusterSlots entries; null: not known
  std::vector<Node*> masters_;
  std::size_t next_master_ = 0;
};

}  // namespace leasehold::detail
