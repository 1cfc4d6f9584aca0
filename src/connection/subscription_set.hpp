// The channels one subscriber connection is to watch, without any I/O: the watches on each
// channel (one subscription for all of them), the subscription's state at the server, and what
// to send and whom to tell as watches come and go, confirmations and messages arrive and the
// connection is lost and made again. The subscriber (Subscriber) sends the commands and makes
// the deliveries; each command names one channel, so that every one gets one reply.
//
// Confirmations are taken by channel, not by order: a command sent twice (once before a lost
// connection, once after) only confirms twice.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/notifications.hpp"

namespace leasehold::detail {

class SubscriptionSet {
 public:
  enum class Verb { subscribe, unsubscribe };  // SSUBSCRIBE, SUNSUBSCRIBE
  struct Command {
    Verb verb;
    std::string channel;
    friend bool operator==(const Command&, const Command&) = default;
  };
  struct Delivery {
    std::shared_ptr<ChannelListener> listener;
    ChannelEvent event;
    std::string payload;
  };
  // What one step asks for: the commands to send (in order), then the deliveries to make.
  struct Effects {
    std::vector<Command> commands;
    std::vector<Delivery> deliveries;
  };

  std::uint64_t watch(std::string channel, ChannelListener listener, Effects& effects);
  void unwatch(std::uint64_t id, Effects& effects);

  // The server confirmed `verb` on `channel`: an answer to a command, or (an unsubscribe that
  // was not asked for) the server ended the subscription itself, as a cluster node does when
  // the channel's slot moves away.
  void on_confirmed(Verb verb, const std::string& channel, bool asked, Effects& effects);
  // The command failed (an error reply, a timeout): the channel is not watched until the next
  // connection.
  void on_refused(Verb verb, const std::string& channel, Effects& effects);
  void on_message(const std::string& channel, std::string_view payload, Effects& effects);
  void on_connected(Effects& effects);
  void on_lost();

  // Channels watched, and of them subscribed at the server now.
  std::size_t channels() const noexcept { return channels_.size(); }
  std::size_t subscribed() const noexcept;

 private:
  enum class State { none, subscribing, subscribed, unsubscribing, refused };
  struct Channel {
    State state = State::none;
    std::map<std::uint64_t, std::shared_ptr<ChannelListener>> listeners;
  };

  void tell_all(const Channel& channel, ChannelEvent event, std::string_view payload,
                Effects& effects) const;
  // Subscribes (connected) or leaves it for the next connection.
  void subscribe(const std::string& name, Channel& channel, Effects& effects);

  std::map<std::string, Channel, std::less<>> channels_;
  std::map<std::uint64_t, std::string> watches_;  // watch id -> its channel
  std::uint64_t next_id_ = 1;
  bool connected_ = false;
};

}  // namespace leasehold::detail
