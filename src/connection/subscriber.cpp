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
  if (!options_.client_name.empty())
    options_.client_name += ":subscriber";
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

void Subscriber::close() {
  closed_ = true;
  if (!core_)
    return;
  core_->set_push_sink(nullptr);
  core_->set_connection_observer({});
  core_->close();
}

void Subscriber::follow_master(const RedisUrl::Endpoint& master,
                               const RedisUrl::Endpoint& sentinel) {
  if (core_ && !closed_)
    core_->master_named(master, sentinel);
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
    if (connected) {
      if (self->connected_before_)
        self->restored_at_ = Clock::now();
      self->connected_before_ = true;
      self->set_.on_connected(effects);
    } else
      self->set_.on_lost();
    self->run(std::move(effects));
  });
  core_->start();
}

bool Subscriber::take(Reply& reply, const Request* awaited) {
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
