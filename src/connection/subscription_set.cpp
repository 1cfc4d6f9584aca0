#include "subscription_set.hpp"

#include <algorithm>

namespace leasehold::detail {

std::uint64_t SubscriptionSet::watch(std::string name, ChannelListener listener, Effects& effects) {
  const std::uint64_t id = next_id_++;
  auto shared = std::make_shared<ChannelListener>(std::move(listener));
  Channel& channel = channels_[name];
  channel.listeners.emplace(id, shared);
  watches_.emplace(id, name);
  switch (channel.state) {
    case State::none:
      subscribe(name, channel, effects);
      break;
    case State::subscribed:
      effects.deliveries.push_back({shared, ChannelEvent::subscribed, {}});
      break;
    case State::refused:
      effects.deliveries.push_back({shared, ChannelEvent::unavailable, {}});
      break;
    case State::subscribing:
    case State::unsubscribing:  // its confirmation subscribes again
      break;
  }
  return id;
}

void SubscriptionSet::unwatch(std::uint64_t id, Effects& effects) {
  const auto watch = watches_.find(id);
  if (watch == watches_.end())
    return;
  const auto found = channels_.find(watch->second);
  watches_.erase(watch);
  Channel& channel = found->second;
  channel.listeners.erase(id);
  if (!channel.listeners.empty())
    return;
  switch (channel.state) {
    case State::subscribed:
      channel.state = State::unsubscribing;
      effects.commands.push_back({Verb::unsubscribe, found->first});
      break;
    case State::none:
    case State::refused:
      channels_.erase(found);
      break;
    case State::subscribing:  // its confirmation unsubscribes
    case State::unsubscribing:
      break;
  }
}

void SubscriptionSet::on_confirmed(Verb verb, const std::string& name, bool asked,
                                   Effects& effects) {
  const auto found = channels_.find(name);
  if (found == channels_.end()) {
    if (verb == Verb::subscribe) {  // a late duplicate for a channel no one watches
      channels_[name].state = State::unsubscribing;
      effects.commands.push_back({Verb::unsubscribe, name});
    }
    return;
  }
  Channel& channel = found->second;
  if (verb == Verb::subscribe) {
    if (channel.listeners.empty()) {
      if (channel.state != State::unsubscribing) {
        channel.state = State::unsubscribing;
        effects.commands.push_back({Verb::unsubscribe, name});
      }
      return;
    }
    channel.state = State::subscribed;
    tell_all(channel, ChannelEvent::subscribed, {}, effects);
    return;
  }
  if (channel.listeners.empty()) {
    channels_.erase(found);
    return;
  }
  if (!asked || channel.state == State::subscribed)
    tell_all(channel, ChannelEvent::unavailable, {}, effects);
  channel.state = State::none;
  subscribe(name, channel, effects);
}

void SubscriptionSet::on_refused(Verb verb, const std::string& name, Effects& effects) {
  const auto found = channels_.find(name);
  if (found == channels_.end())
    return;
  Channel& channel = found->second;
  if (channel.listeners.empty()) {
    channels_.erase(found);
    return;
  }
  if (verb == Verb::unsubscribe) {  // watched again meanwhile: subscribed, as far as is known
    channel.state = State::subscribed;
    tell_all(channel, ChannelEvent::subscribed, {}, effects);
    return;
  }
  if (channel.state != State::subscribing)
    return;  // a failure of a command sent before the channel's latest one
  channel.state = State::refused;
  tell_all(channel, ChannelEvent::unavailable, {}, effects);
}

void SubscriptionSet::on_message(const std::string& name, std::string_view payload,
                                 Effects& effects) {
  const auto found = channels_.find(name);
  if (found != channels_.end())
    tell_all(found->second, ChannelEvent::message, payload, effects);
}

void SubscriptionSet::on_connected(Effects& effects) {
  connected_ = true;
  for (auto& [name, channel] : channels_)
    if (channel.state == State::none || channel.state == State::refused)
      subscribe(name, channel, effects);
}

void SubscriptionSet::on_lost() {
  connected_ = false;
  // Every subscription ended with the connection; the watched ones are made again on the next.
  std::erase_if(channels_, [](const auto& entry) { return entry.second.listeners.empty(); });
  for (auto& [name, channel] : channels_)
    channel.state = State::none;
}

std::size_t SubscriptionSet::subscribed() const noexcept {
  return static_cast<std::size_t>(std::count_if(channels_.begin(), channels_.end(), [](auto& c) {
    return c.second.state == State::subscribed;
  }));
}

void SubscriptionSet::tell_all(const Channel& channel, ChannelEvent event, std::string_view payload,
                               Effects& effects) const {
  for (const auto& [id, listener] : channel.listeners)
    effects.deliveries.push_back({listener, event, std::string(payload)});
}

void SubscriptionSet::subscribe(const std::string& name, Channel& channel, Effects& effects) {
  if (!connected_)
    return;
  channel.state = State::subscribing;
  effects.commands.push_back({Verb::subscribe, name});
}

}  // namespace leasehold::detail
