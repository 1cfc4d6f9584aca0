#include "subscriber.hpp"

#include <asio/post.hpp>

namespace leasehold::detail {
namespace {

using Verb = SubscriptionSet::Verb;

// Sharded pub/sub (Redis 7.0), or plain pub/sub for a server that gets the Redis 6 forms of
// calls: their scripts PUBLISH rather than SPUBLISH (redis6_forms.hpp).
std::string_view verb_name(Verb verb, bool sharded) {
  if (verb == Verb::subscribe)
    return sharded ? "SSUBSCRIBE" : "SUBSCRIBE";
  return sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
}

// The kind of push that confirms `verb`.
std::string_view confirmation_of(Verb verb, bool sharded) {
  if (verb == Verb::subscribe)
    return sharded ? "ssubscribe" : "subscribe";
  return sharded ? "sunsubscribe" : "unsubscribe";
}

// ["<kind>", channel, ...] with a string channel: the channel; else null.
const std::string* push_channel(const Reply& reply, std::string_view kind) {
  if (reply.type != Reply::Type::array || reply.elements.size() != 3 ||
      reply.elements[0].type != Reply::Type::string || reply.elements[0].str != kind ||
      reply.elements[1].type != Reply::Type::string)
    return nullptr;
  return &reply.elements[1].str;
}

}  // namespace

Subscriber::Subscriber(ConnectionStrand strand, RedisUrl url, ClientOptions options,
                       ServerConnection::TlsContext tls)
    : strand_(std::move(strand)),
      url_(std::move(url)),
      options_(std::move(options)),
      tls_(std::move(tls)) {
  // A connection that only watches: no checks, no acknowledgements, a name of its own.
  options_.warn_on_eviction_policy = false;
  options_.replica_acks = 0;
  options_.safe_failover = false;
  if (!options_.client_name.empty()) {
    tracker_name_ = options_.client_name + ":tracker";
    options_.client_name += ":subscriber";
  }
}

std::uint64_t Subscriber::watch(std::string channel, ChannelListener listener) {
  if (!core_ && !closed_)
    start();
  SubscriptionSet::Effects effects;
  const std::uint64_t id = set_.watch(std::move(channel), std::move(listener), effects);
  if (closed_)
    for (auto& delivery : effects.deliveries)
      delivery.event = ChannelEvent::unavailable;
  run(std::move(effects));
  return id;
}

void Subscriber::unwatch(std::uint64_t id) {
  SubscriptionSet::Effects effects;
  set_.unwatch(id, effects);
  run(std::move(effects));
}

std::uint64_t Subscriber::watch_key(std::string key, ChannelListener listener) {
  if (!core_ && !closed_)
    start();
  if (!tracker_ && !closed_)
    start_tracker();
  KeyTracking::Effects effects;
  const std::uint64_t id = keys_.watch(std::move(key), std::move(listener), effects);
  run(std::move(effects));
  return id;
}

void Subscriber::unwatch_key(std::uint64_t id) {
  KeyTracking::Effects effects;
  keys_.unwatch(id, effects);
  run(std::move(effects));
}

void Subscriber::close() {
  closed_ = true;
  if (tracker_) {
    tracker_->set_connection_observer({});
    tracker_->close();
  }
  if (!core_)
    return;
  core_->set_push_sink(nullptr);
  core_->set_connection_observer({});
  core_->close();
}

void Subscriber::follow_master(const RedisUrl::Endpoint& master,
                               const RedisUrl::Endpoint& sentinel) {
  if (closed_)
    return;
  if (core_)
    core_->master_named(master, sentinel);
  if (tracker_)
    tracker_->master_named(master, sentinel);
}

void Subscriber::start() {
  core_ = std::make_shared<ServerConnection>(strand_, url_, options_, tls_);
  core_->set_push_sink(this);
  core_->set_watches_sentinels(false);
  core_->set_connection_observer([weak = weak_from_this()](bool connected) {
    const auto self = weak.lock();
    if (!self || self->closed_)
      return;
    SubscriptionSet::Effects effects;
    KeyTracking::Effects key_effects;
    if (connected) {
      if (self->connected_before_)
        self->restored_at_ = Clock::now();
      self->connected_before_ = true;
      self->keys_.on_subscriber_connected(key_effects);  // its CLIENT ID goes first
      self->set_.on_connected(effects);
    } else {
      self->keys_.on_subscriber_lost(key_effects);
      self->set_.on_lost();
    }
    self->run(std::move(key_effects));
    self->run(std::move(effects));
  });
  core_->start();
}

void Subscriber::start_tracker() {
  ClientOptions options = options_;
  options.client_name = tracker_name_;
  tracker_ = std::make_shared<ServerConnection>(strand_, url_, options, tls_);
  tracker_->set_watches_sentinels(false);
  tracker_->set_connection_observer([weak = weak_from_this()](bool connected) {
    const auto self = weak.lock();
    if (!self || self->closed_)
      return;
    KeyTracking::Effects effects;
    if (connected)
      self->keys_.on_tracker_connected(effects);
    else
      self->keys_.on_tracker_lost(effects);
    self->run(std::move(effects));
  });
  tracker_->start();
}

bool Subscriber::take(Reply& reply, const Request* awaited) {
  if (take_invalidation(reply))
    return true;
  SubscriptionSet::Effects effects;
  const bool sharded = this->sharded();
  if (const std::string* channel = push_channel(reply, sharded ? "smessage" : "message")) {
    if (reply.elements[2].type != Reply::Type::string)
      return false;
    set_.on_message(*channel, reply.elements[2].str, effects);
  } else if (const std::string* ended =
                 push_channel(reply, confirmation_of(Verb::unsubscribe, sharded))) {
    // The answer to this connection's own SUNSUBSCRIBE goes to its call; any other is the
    // server's own.
    if (awaited != nullptr &&
        awaited->bytes() ==
            Request::command({verb_name(Verb::unsubscribe, sharded), *ended}).bytes())
      return false;
    set_.on_confirmed(Verb::unsubscribe, *ended, false, effects);
  } else {
    return false;
  }
  run(std::move(effects));
  return true;
}

bool Subscriber::take_invalidation(const Reply& reply) {
  const std::string* channel = push_channel(reply, "message");
  if (channel == nullptr || *channel != KeyTracking::kInvalidations)
    return false;
  // ["message", "__redis__:invalidate", [key, ...]], or a null for a flush of every key.
  std::optional<std::vector<std::string>> keys;
  const Reply& payload = reply.elements[2];
  if (payload.type == Reply::Type::array) {
    keys.emplace();
    for (const Reply& key : payload.elements)
      if (key.type == Reply::Type::string)
        keys->push_back(key.str);
  }
  KeyTracking::Effects effects;
  keys_.on_invalidated(keys, effects);
  run(std::move(effects));
  return true;
}

bool Subscriber::sharded() const noexcept {
  return !core_ || !core_->uses_redis6_forms();
}

void Subscriber::run(SubscriptionSet::Effects effects) {
  if (!closed_)
    for (const SubscriptionSet::Command& command : effects.commands)
      send(command);
  // Never from within the caller's own watch() or unwatch(); and not to a listener that was
  // unwatched meanwhile.
  for (SubscriptionSet::Delivery& delivery : effects.deliveries) {
    asio::post(strand_, [listener = std::weak_ptr<ChannelListener>(delivery.listener),
                         event = delivery.event, payload = std::move(delivery.payload)] {
      if (const auto alive = listener.lock())
        (*alive)(event, payload);
    });
  }
}

void Subscriber::run(KeyTracking::Effects effects) {
  if (!closed_)
    for (const KeyTracking::Command& command : effects.commands)
      send(command);
  for (KeyTracking::Delivery& delivery : effects.deliveries) {
    asio::post(strand_, [listener = std::weak_ptr<ChannelListener>(delivery.listener),
                         event = delivery.event, key = std::move(delivery.key)] {
      if (const auto alive = listener.lock())
        (*alive)(event, key);
    });
  }
}

void Subscriber::send(const KeyTracking::Command& command) {
  using What = KeyTracking::Command::What;
  // Runs `step` with the outcome of `query` sent on `connection`, unless the subscriber closed.
  auto submit = [this](ServerConnection& connection, Command query, auto step) {
    auto on_outcome = [weak = weak_from_this(), step = std::move(step)](Result<Reply> result) {
      const auto self = weak.lock();
      if (!self || self->closed_)
        return;
      KeyTracking::Effects effects;
      step(self->keys_, result, effects);
      self->run(std::move(effects));
    };
    connection.submit(std::make_unique<QueryOperation<Command, decltype(on_outcome)>>(
        std::move(query), Clock::now(), std::move(on_outcome)));
  };
  switch (command.what) {
    case What::ask_id:
      submit(*core_, Command{"CLIENT", "ID"},
             [](KeyTracking& keys, const Result<Reply>& id, KeyTracking::Effects& effects) {
               const bool known = id && id->type == Reply::Type::integer && id->integer >= 0;
               keys.on_subscriber_id(
                   known ? std::optional(static_cast<std::uint64_t>(id->integer)) : std::nullopt,
                   effects);
             });
      break;
    case What::subscribe:
      submit(*core_, Command{"SUBSCRIBE", KeyTracking::kInvalidations},
             [](KeyTracking& keys, const Result<Reply>& reply, KeyTracking::Effects& effects) {
               const std::string* confirmed = reply ? push_channel(*reply, "subscribe") : nullptr;
               keys.on_subscribed(confirmed != nullptr && *confirmed == KeyTracking::kInvalidations,
                                  effects);
             });
      break;
    case What::enable: {
      const std::string redirect = std::to_string(command.redirect);
      submit(*tracker_, Command{"CLIENT", "TRACKING", "on", "REDIRECT", redirect, "OPTIN"},
             [redirect = command.redirect](KeyTracking& keys, const Result<Reply>& reply,
                                           KeyTracking::Effects& effects) {
               keys.on_enabled(redirect, static_cast<bool>(reply), effects);
             });
      break;
    }
    case What::arm: {
      // The read right after CLIENT CACHING yes is the one tracked (nothing else is sent on the
      // tracker connection between the two). Armed only if both were answered: without
      // tracking on, EXISTS alone tracks nothing.
      auto caching = std::make_shared<bool>(false);
      submit(*tracker_, Command{"CLIENT", "CACHING", "yes"},
             [caching](KeyTracking&, const Result<Reply>& reply, KeyTracking::Effects&) {
               *caching = static_cast<bool>(reply);
             });
      submit(*tracker_, Command{"EXISTS", command.key},
             [caching, key = command.key, arm = command.arm](
                 KeyTracking& keys, const Result<Reply>& reply, KeyTracking::Effects& effects) {
               keys.on_armed(key, arm, *caching && reply, effects);
             });
      break;
    }
  }
}

void Subscriber::send(const SubscriptionSet::Command& command) {
  const bool sharded = this->sharded();
  auto on_outcome = [weak = weak_from_this(), command, sharded](Result<Reply> result) {
    const auto self = weak.lock();
    if (!self || self->closed_)
      return;
    SubscriptionSet::Effects effects;
    const std::string_view expected = confirmation_of(command.verb, sharded);
    const std::string* confirmed = result ? push_channel(*result, expected) : nullptr;
    if (confirmed != nullptr && *confirmed == command.channel)
      self->set_.on_confirmed(command.verb, command.channel, true, effects);
    else
      self->set_.on_refused(command.verb, command.channel, effects);
    self->run(std::move(effects));
  };
  const Command query{verb_name(command.verb, sharded), command.channel};
  core_->submit(std::make_unique<QueryOperation<Command, decltype(on_outcome)>>(
      query, Clock::now(), std::move(on_outcome)));
}

}  // namespace leasehold::detail
