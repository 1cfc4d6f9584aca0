// The subscriber of one server: a connection of its own in subscribe mode (RESP2 sharded
// pub/sub), made at the first watch, that carries every watch of a client on that server. What
// to send and whom to tell is a SubscriptionSet's; this is the I/O around it.
//
// Everything here runs on the strand of the connection that owns it.
#pragma once

#include <memory>

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
  Clock::time_point restored_at() const noexcept override { return restored_at_; }

  // Ends the connection; listeners are not called again.
  void close();
  // Behind Sentinel: `sentinel` named `master` the master (its owner's connection watches them).
  void follow_master(const RedisUrl::Endpoint& master, const RedisUrl::Endpoint& sentinel);

  const SubscriptionSet& subscriptions() const noexcept { return set_; }

 private:
  bool take(Reply& reply, const Request* awaited) override;
  void start();
  void run(SubscriptionSet::Effects effects);
  void send(const SubscriptionSet::Command& command);
  // Whether the connection subscribes with sharded pub/sub (SSUBSCRIBE), as it does unless it
  // sends the Redis 6 forms of calls.
  bool sharded() const noexcept;

  ConnectionStrand strand_;
  RedisUrl url_;
  ClientOptions options_;
  ServerConnection::TlsContext tls_;
  std::shared_ptr<ServerConnection> core_;  // made at the first watch
  SubscriptionSet set_;
  bool connected_before_ = false;
  Clock::time_point restored_at_ = Clock::time_point::min();
  bool closed_ = false;
};

}  // namespace leasehold::detail
