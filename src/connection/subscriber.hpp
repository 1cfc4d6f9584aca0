// The subscriber of one server: a connection of its own in subscribe mode (RESP2 sharded
// pub/sub), made at the first watch, that carries every watch of a client on that server. What
// to send and whom to tell is a SubscriptionSet's; this is the I/O around it. Watches of keys
// add a second connection, the tracker, that arms the keys with the invalidations redirected to
// the subscriber's (KeyTracking).
//
// Everything here runs on the strand of the connection that owns it.
#pragma once

#include <memory>

#include "key_tracking.hpp"
#include "leasehold/detail/notifications.hpp"
#include "pipeline.hpp"
#include "server_connection.hpp"
#include "subscription_set.hpp"

namespace leasehold::detail {

class Subscriber final : public Notifications,
                         public std::enable_shared_from_this<Subscriber>,
                         private PushSink {
 public:
  Subscriber(ConnectionStrand strand, RedisUrl url, ClientOptions options,
             ServerConnection::TlsContext tls);

  std::uint64_t watch(std::string channel, ChannelListener listener) override;
  void unwatch(std::uint64_t id) override;
  std::uint64_t watch_key(std::string key, ChannelListener listener) override;
  void unwatch_key(std::uint64_t id) override;
  Clock::time_point restored_at() const noexcept override { return restored_at_; }

  // Ends the connection; listeners are not called again.
  void close();
  // Behind Sentinel: `sentinel` named `master` the master (its owner's connection watches them).
  void follow_master(const RedisUrl::Endpoint& master, const RedisUrl::Endpoint& sentinel);

  const SubscriptionSet& subscriptions() const noexcept { return set_; }

 private:
  bool take(Reply& reply, const Request* awaited) override;
  void start();
  void start_tracker();
  void run(SubscriptionSet::Effects effects);
  void run(KeyTracking::Effects effects);
  void send(const SubscriptionSet::Command& command);
  void send(const KeyTracking::Command& command);
  // An invalidation (RESP2: a message on __redis__:invalidate): whether `reply` was one.
  bool take_invalidation(const Reply& reply);
  // Whether the connection subscribes with sharded pub/sub (SSUBSCRIBE), as it does unless it
  // sends the Redis 6 forms of calls.
  bool sharded() const noexcept;

  ConnectionStrand strand_;
  RedisUrl url_;
  ClientOptions options_;
  ServerConnection::TlsContext tls_;
  std::shared_ptr<ServerConnection> core_;  // made at the first watch
  SubscriptionSet set_;
  KeyTracking keys_;
  std::shared_ptr<ServerConnection> tracker_;  // made at the first watch of a key
  std::string tracker_name_;                   // its client name
  bool connected_before_ = false;
  Clock::time_point restored_at_ = Clock::time_point::min();
  bool closed_ = false;
};

}  // namespace leasehold::detail
