#include "cluster_subscriptions.hpp"

#include <asio/post.hpp>

#include "leasehold/slot.hpp"

#include "tell_observer.hpp"

namespace leasehold::detail {

ClusterSubscriptions::ClusterSubscriptions(ConnectionStrand strand, OwnerOf owner_of,
                                           std::function<void()> refresh_soon)
    : strand_(std::move(strand)),
      owner_of_(std::move(owner_of)),
      refresh_soon_(std::move(refresh_soon)) {}

std::uint64_t ClusterSubscriptions::watch(std::string channel, ChannelListener listener) {
  return add(std::move(channel), std::move(listener), false);
}

std::uint64_t ClusterSubscriptions::watch_key(std::string key, ChannelListener listener) {
  return add(std::move(key), std::move(listener), true);
}

std::uint64_t ClusterSubscriptions::add(std::string channel, ChannelListener listener, bool key) {
  const std::uint64_t id = next_id_++;
  const std::uint16_t slot = key_slot(channel);
  Watch& watch = watches_
                     .emplace(id, Watch{std::move(channel),
                                        slot,
                                        std::make_shared<ChannelListener>(std::move(listener)),
                                        {},
                                        0,
                                        false,
                                        false,
                                        key})
                     .first->second;
  place(id, watch);
  return id;
}

void ClusterSubscriptions::unwatch(std::uint64_t id) {
  const auto found = watches_.find(id);
  if (found == watches_.end())
    return;
  if (const auto node = found->second.node.lock())
    leave(found->second, *node);
  watches_.erase(found);
}

void ClusterSubscriptions::leave(const Watch& watch, ServerConnection& node) {
  if (watch.key)
    node.notifications().unwatch_key(watch.node_watch);
  else
    node.notifications().unwatch(watch.node_watch);
}

void ClusterSubscriptions::reroute() {
  for (auto& [id, watch] : watches_) {
    const std::shared_ptr<ServerConnection> now = owner_of_(watch.slot);
    const std::shared_ptr<ServerConnection> before = watch.node.lock();
    if (now == before && now)
      continue;
    if (before)
      leave(watch, *before);
    watch.lost = watch.subscribed;
    place(id, watch);
  }
}

void ClusterSubscriptions::close() {
  closed_ = true;
  watches_.clear();  // the nodes' subscribers close with them
}

void ClusterSubscriptions::place(std::uint64_t id, Watch& watch) {
  const std::shared_ptr<ServerConnection> owner = closed_ ? nullptr : owner_of_(watch.slot);
  watch.node = owner;
  watch.node_watch = 0;
  if (!owner) {
    tell(watch, ChannelEvent::unavailable);
    return;
  }
  auto listener = [weak = weak_from_this(), id](ChannelEvent event, std::string_view payload) {
    const auto self = weak.lock();
    if (!self || self->closed_)
      return;
    const auto found = self->watches_.find(id);
    if (found == self->watches_.end())
      return;
    Watch& watch = found->second;
    if (!watch.key)  // (a key's tracking follows its slot at the next slot map's reroute)
      self->note_channel(watch, event);
    (*watch.listener)(event, payload);
  };
  watch.node_watch = watch.key
                         ? owner->notifications().watch_key(watch.channel, std::move(listener))
                         : owner->notifications().watch(watch.channel, std::move(listener));
}

void ClusterSubscriptions::note_channel(Watch& watch, ChannelEvent event) {
  // The node ended the subscription, or could not make it: the slot may have moved.
  if (event == ChannelEvent::unavailable) {
    watch.lost = watch.subscribed;
    refresh_soon_();
  }
  if (event == ChannelEvent::subscribed) {
    if (watch.lost)
      restored_at_ = Clock::now();
    watch.subscribed = true;
    watch.lost = false;
  }
}

void ClusterSubscriptions::tell(const Watch& watch, ChannelEvent event) {
  asio::post(strand_, [listener = std::weak_ptr<ChannelListener>(watch.listener), event] {
    if (const auto alive = listener.lock())
      (*alive)(event, {});
  });
}

}  // namespace leasehold::detail
