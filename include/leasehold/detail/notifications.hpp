// What a connection tells its waiters: the messages published on channels (sharded pub/sub,
// SSUBSCRIBE), carried by one subscriber connection per server for all of a client's watches,
// and the changes to keys (by the server's tracking of keys, told on that connection too).
// Internal: waiting acquires use it (docs/locks.md, "Waiting for a lock").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "leasehold/clock.hpp"

namespace leasehold::detail {

enum class ChannelEvent {
  subscribed,   // the channel is watched from now on (again, after a reconnect): look now
  message,      // a message was published on it (the payload)
  unavailable,  // not watched for now (no subscriber, refused, or the server ended it)
};

// Called on the transport's strand.
using ChannelListener = std::function<void(ChannelEvent, std::string_view payload)>;

class Notifications {
 public:
  // On the transport's strand. The listener hears of the channel until unwatch(id); its first
  // event is `subscribed` (or `unavailable`). Watches of one channel share one subscription,
  // which ends with the last of them.
  virtual std::uint64_t watch(std::string channel, ChannelListener listener) = 0;
  virtual void unwatch(std::uint64_t id) = 0;
  // On the transport's strand. The listener hears of changes to `key` itself, whoever makes them
  // (a write, an expiry, an eviction, a delete), by the server's tracking of keys: `subscribed`
  // once the key is tracked (look now), `message` (the key as payload) after each change, and
  // `unavailable` while it is not tracked (a connection down; a user not allowed CLIENT
  // TRACKING, CLIENT CACHING or CLIENT ID; a server older than Redis 6.0), until unwatch_key(id).
  virtual std::uint64_t watch_key(std::string key, ChannelListener listener) = 0;
  virtual void unwatch_key(std::uint64_t id) = 0;
  // When a subscription that had been lost last came back (a reconnect; a failover that moved
  // the channel); Clock::time_point::min() if none ever did. Messages may have been missed before
  // it, and a failover may have brought back state that had already changed (docs/locks.md).
  virtual Clock::time_point restored_at() const noexcept = 0;

 protected:
  ~Notifications() = default;
};

}  // namespace leasehold::detail
