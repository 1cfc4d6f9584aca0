// A cluster's watches: each channel watched through the subscriber of the master that serves the
// channel's slot (one subscriber per master for all the client's watches), and moved to the new
// master when the slot moves (a resharding, a failover). Watches of keys the same way, by the
// key's slot. A node that stops serving the slot ends
// the subscription itself; the watch then hears `unavailable`, the cluster reads its slot map
// again, and reroute() subscribes at the slot's new owner.
//
// On the cluster's strand.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "leasehold/detail/notifications.hpp"
#include "server_connection.hpp"
#include "tell_observer.hpp"

namespace leasehold::detail {

class ClusterSubscriptions final : public Notifications,
                                   public std::enable_shared_from_this<ClusterSubscriptions> {
 public:
  using OwnerOf = std::function<std::shared_ptr<ServerConnection>(std::uint16_t slot)>;
  ClusterSubscriptions(ConnectionStrand strand, OwnerOf owner_of,
                       std::function<void()> refresh_soon);

  std::uint64_t watch(std::string channel, ChannelListener listener) override;
  void unwatch(std::uint64_t id) override;
  std::uint64_t watch_key(std::string key, ChannelListener listener) override;
  void unwatch_key(std::uint64_t id) override { unwatch(id); }
  Clock::time_point restored_at() const noexcept override { return restored_at_; }

  // After a new slot map: every watch whose slot has another owner now moves there.
  void reroute();
  void close();

 private:
  struct Watch {
    std::string channel;  // or the key
    std::uint16_t slot;
    std::shared_ptr<ChannelListener> listener;
    std::weak_ptr<ServerConnection> node;  // where it is watched now (none: no owner known)
    std::uint64_t node_watch = 0;
    bool subscribed = false;  // at some node, once at least
    bool lost = false;        // since: ended, or moved to another node
    bool key = false;         // a key's changes (Notifications::watch_key), not a channel's
  };
  std::uint64_t add(std::string channel, ChannelListener listener, bool key);
  void leave(const Watch& watch, ServerConnection& node);
  void place(std::uint64_t id, Watch& watch);
  void tell(const Watch& watch, ChannelEvent event);
  // What a channel's event says of its subscription (restored_at(), a slot map to read again).
  void note_channel(Watch& watch, ChannelEvent event);

  ConnectionStrand strand_;
  OwnerOf owner_of_;
  std::function<void()> refresh_soon_;
  std::map<std::uint64_t, Watch> watches_;
  std::uint64_t next_id_ = 1;
  Clock::time_point restored_at_ = Clock::time_point::min();
  bool closed_ = false;
};

}  // namespace leasehold::detail
