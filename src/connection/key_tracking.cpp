#include "key_tracking.hpp"

namespace leasehold::detail {

std::uint64_t KeyTracking::watch(std::string name, ChannelListener listener, Effects& effects) {
  const std::uint64_t id = next_id_++;
  auto shared = std::make_shared<ChannelListener>(std::move(listener));
  const auto [found, added] = keys_.try_emplace(name);
  Key& key = found->second;
  key.listeners.emplace(id, shared);
  watches_.emplace(id, name);
  if (added && subscriber_id_ && subscription_ == Subscription::none) {
    subscription_ = Subscription::subscribing;
    effects.commands.push_back({Command::What::subscribe, {}, 0, 0});
  }
  if (added)
    enable_if_possible(effects);
  if (key.state == KeyState::armed && key.told)
    effects.deliveries.push_back({shared, ChannelEvent::subscribed, name});
  else if (key.state == KeyState::idle && ready())
    arm(name, key, effects);
  return id;
}

void KeyTracking::unwatch(std::uint64_t id, Effects&) {
  const auto watch = watches_.find(id);
  if (watch == watches_.end())
    return;
  const auto found = keys_.find(watch->second);
  watches_.erase(watch);
  found->second.listeners.erase(id);
  // The server may still send one invalidation for it, which finds no key and is dropped.
  if (found->second.listeners.empty())
    keys_.erase(found);
}

void KeyTracking::on_subscriber_connected(Effects& effects) {
  subscriber_connected_ = true;
  subscriber_id_.reset();
  subscription_ = Subscription::none;
  // Asked at every connection, watched keys or not: once the connection subscribes to a channel
  // it can no longer ask.
  effects.commands.push_back({Command::What::ask_id, {}, 0, 0});
}

void KeyTracking::on_subscriber_id(std::optional<std::uint64_t> id, Effects& effects) {
  if (!subscriber_connected_)
    return;
  subscriber_id_ = id;
  if (!id)
    return;  // refused (an ACL may): keys are not tracked until the next connection
  if (watching() && subscription_ == Subscription::none) {
    subscription_ = Subscription::subscribing;
    effects.commands.push_back({Command::What::subscribe, {}, 0, 0});
  }
  enable_if_possible(effects);
}

void KeyTracking::on_subscribed(bool confirmed, Effects& effects) {
  if (subscription_ != Subscription::subscribing)
    return;
  subscription_ = confirmed ? Subscription::subscribed : Subscription::refused;
  if (!ready())
    return;
  for (auto& [name, key] : keys_)
    if (key.state == KeyState::idle)
      arm(name, key, effects);
}

void KeyTracking::on_subscriber_lost(Effects& effects) {
  subscriber_connected_ = false;
  subscriber_id_.reset();
  subscription_ = Subscription::none;
  lose_all(effects);
}

void KeyTracking::on_tracker_connected(Effects& effects) {
  tracker_connected_ = true;
  tracking_ = Tracking::off;
  enable_if_possible(effects);
}

void KeyTracking::on_enabled(std::uint64_t redirect, bool enabled, Effects& effects) {
  if (tracking_ != Tracking::enabling || redirect != redirect_)
    return;  // asked before the connection or the redirect changed
  tracking_ = enabled ? Tracking::on : Tracking::refused;
  if (!enabled) {
    lose_all(effects);
    return;
  }
  if (subscriber_id_ && *subscriber_id_ != redirect_) {  // the subscriber reconnected meanwhile
    enable_if_possible(effects);
    return;
  }
  if (!ready())
    return;
  for (auto& [name, key] : keys_)
    if (key.state == KeyState::idle)
      arm(name, key, effects);
}

void KeyTracking::on_armed(const std::string& name, std::uint64_t which, bool armed,
                           Effects& effects) {
  const auto found = keys_.find(name);
  if (found == keys_.end() || found->second.state != KeyState::arming ||
      found->second.arms != which)
    return;  // unwatched, or tracking was lost meanwhile (armed again once it works)
  Key& key = found->second;
  if (!armed) {
    // Refused (an ACL may refuse CLIENT CACHING): no key can be tracked on this connection.
    tracking_ = Tracking::refused;
    lose_all(effects);
    return;
  }
  if (key.changed) {  // a change came while it was armed: arm once more, then tell
    arm(name, key, effects);
    return;
  }
  key.state = KeyState::armed;
  tell(key, name, key.told ? ChannelEvent::message : ChannelEvent::subscribed, effects);
  key.told = true;
}

void KeyTracking::on_tracker_lost(Effects& effects) {
  tracker_connected_ = false;
  tracking_ = Tracking::off;
  lose_all(effects);
}

void KeyTracking::on_invalidated(const std::optional<std::vector<std::string>>& names,
                                 Effects& effects) {
  auto invalidate = [&](const std::string& name, Key& key) {
    if (key.state == KeyState::armed)
      arm(name, key, effects);
    else if (key.state == KeyState::arming)
      key.changed = true;
  };
  if (!names) {
    for (auto& [name, key] : keys_)
      invalidate(name, key);
    return;
  }
  for (const std::string& name : *names)
    if (const auto found = keys_.find(name); found != keys_.end())
      invalidate(found->first, found->second);
}

bool KeyTracking::ready() const noexcept {
  return subscriber_connected_ && subscriber_id_ && subscription_ == Subscription::subscribed &&
         tracker_connected_ && tracking_ == Tracking::on && redirect_ == *subscriber_id_;
}

void KeyTracking::arm(const std::string& name, Key& key, Effects& effects) {
  key.state = KeyState::arming;
  key.changed = false;
  effects.commands.push_back({Command::What::arm, name, 0, ++key.arms});
}

void KeyTracking::enable_if_possible(Effects& effects) {
  if (!tracker_connected_ || !subscriber_id_ || !watching())
    return;
  if (tracking_ == Tracking::enabling)
    return;  // its answer enables again if the redirect changed meanwhile
  if ((tracking_ == Tracking::on || tracking_ == Tracking::refused) && redirect_ == *subscriber_id_)
    return;
  tracking_ = Tracking::enabling;
  redirect_ = *subscriber_id_;
  effects.commands.push_back({Command::What::enable, {}, redirect_, 0});
}

void KeyTracking::lose_all(Effects& effects) {
  for (auto& [name, key] : keys_) {
    if (key.told)
      tell(key, name, ChannelEvent::unavailable, effects);
    key.told = false;
    key.state = KeyState::idle;
    key.changed = false;
  }
}

void KeyTracking::tell(const Key& key, const std::string& name, ChannelEvent event,
                       Effects& effects) const {
  for (const auto& [id, listener] : key.listeners)
    effects.deliveries.push_back({listener, event, name});
}

}  // namespace leasehold::detail
