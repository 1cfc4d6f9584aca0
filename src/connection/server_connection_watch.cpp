// How a ServerConnection behind Sentinel follows a switch of master while it is connected (or
// waits to reconnect): it watches every sentinel it knows of, each asked what it names now and
// subscribed to the events that name a new master, and leaves a server no longer named at once,
// rather than when Sentinel demotes the old master (at its next look at it, seconds later) or
// when the next reconnect asks. Every sentinel, because only the one that leads a failover tells
// of the promotion at once; the others learn of it up to seconds later. Correctness never depends
// on the watch: a demoted master answers READONLY, and every connection is made to the master
// the sentinels name and checked with ROLE.
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/redirect_error.hpp>

#include "leasehold/log.hpp"
#include "server_connection.hpp"
#include "subscriber.hpp"

namespace leasehold::detail {

struct ServerConnection::SentinelWatch {
  SentinelWatch(const Strand& strand, const RedisUrl& url, RedisUrl::Endpoint sentinel)
      : at(std::move(sentinel)), questions(url), socket(strand), buffer(4096), retry(strand) {}
  Link link() noexcept { return {socket, tls, buffer}; }
  void stop() {
    std::error_code ignored;
    socket.close(ignored);
    retry.cancel();
    if (resolver)
      resolver->cancel();
  }

  const RedisUrl::Endpoint at;
  SentinelDiscovery questions;  // what to send the sentinel, and what its replies mean
  Socket socket;
  std::optional<TlsStream> tls;
  std::vector<char> buffer;
  std::shared_ptr<Resolver> resolver;
  Timer retry;
};

void ServerConnection::watch_sentinels(const std::vector<RedisUrl::Endpoint>& known) {
  if (!watches_sentinels_ || closed())
    return;
  for (const RedisUrl::Endpoint& sentinel : known) {
    if (std::any_of(watches_.begin(), watches_.end(),
                    [&](const auto& watch) { return watch->at == sentinel; }))
      continue;
    auto watch = std::make_shared<SentinelWatch>(strand_, url_, sentinel);
    watches_.push_back(watch);
    asio::co_spawn(strand_, watch_loop(std::move(watch)), [](std::exception_ptr error) {
      if (error)  // the loop reports failures as values; an exception is a bug in leasehold
        std::rethrow_exception(error);
    });
  }
}

ServerConnection::Awaitable<void> ServerConnection::watch_loop(
    std::shared_ptr<SentinelWatch> watch) {
  auto self = shared_from_this();  // keeps the state alive for as long as the loop runs
  while (!closed()) {
    if (const std::optional<std::string> refused = co_await watch_once(*watch)) {
      log(LogLevel::warning,
          "the sentinel at " + watch->at.address() + " refused to tell of switches of master (" +
              *refused +
              "); it is not watched, and a switch it alone tells of is noticed only when the "
              "old master is demoted or the connection is made again");
      break;
    }
    if (closed())
      break;
    // The sentinel could not be reached, or its connection broke: try it again later.
    watch->retry.expires_after(options_.reconnect_delay_max);
    std::error_code ignored;
    co_await watch->retry.async_wait(asio::redirect_error(use_awaitable, ignored));
  }
}

ServerConnection::Awaitable<std::optional<std::string>> ServerConnection::watch_once(
    SentinelWatch& watch) {
  // The connect timeout bounds connecting and the first answer; closing the socket ends them.
  auto resolver = std::make_shared<Resolver>(strand_);
  watch.resolver = resolver;
  auto done = std::make_shared<bool>(false);
  Timer timer(strand_);
  timer.expires_after(options_.connect_timeout);
  timer.async_wait([&watch, self = shared_from_this(), resolver, done](std::error_code e) {
    if (e || *done)
      return;
    *done = true;
    resolver->cancel();
    std::error_code ignored;
    watch.socket.close(ignored);
  });
  codec::ReplyReader reader;
  std::optional<SentinelDiscovery::Answer> answer;
  Failure failure =
      co_await open_stream(watch.link(), url_.node(watch.at), "the sentinel", *resolver, *done);
  if (!failure) {
    answer = co_await ask_sentinel(watch.link(), watch.questions, watch.questions.watch_request(),
                                   reader, watch.at, failure);
  }
  *done = true;
  timer.cancel();
  // What it names now is not acted on: in the middle of a failover a sentinel may still name the
  // old master. Only its events are.
  std::optional<std::string> refused;
  if (answer && answer->master && !closed()) {
    watch_sentinels(watch.questions.sentinels());
    refused = co_await follow_events(watch, reader);
  }
  std::error_code ignored;
  watch.socket.close(ignored);
  watch.tls.reset();
  co_return refused;
}

ServerConnection::Awaitable<std::optional<std::string>> ServerConnection::follow_events(
    SentinelWatch& watch, codec::ReplyReader& reader) {
  for (;;) {
    std::error_code ec;
    while (Reply* reply = reader.next(ec)) {
      if (reply->is_error())
        co_return reply->str;  // SUBSCRIBE refused (an ACL may)
      if (const std::optional<RedisUrl::Endpoint> master = watch.questions.switched_master(*reply))
        master_named(*master, watch.at);
    }
    if (ec || closed())
      co_return std::nullopt;
    const std::size_t n =
        watch.tls ? co_await watch.tls->async_read_some(asio::buffer(watch.buffer),
                                                        asio::redirect_error(use_awaitable, ec))
                  : co_await watch.socket.async_read_some(asio::buffer(watch.buffer),
                                                          asio::redirect_error(use_awaitable, ec));
    if (ec)
      co_return std::nullopt;
    reader.feed(watch.buffer.data(), n);
  }
}

void ServerConnection::master_named(const RedisUrl::Endpoint& master,
                                    const RedisUrl::Endpoint& sentinel) {
  if (subscriber_)
    subscriber_->follow_master(master, sentinel);
  if (closed() || reaches(master))
    return;
  named_master_ = master;
  ++other_masters_named_;
  discovery_->ask_first(sentinel);  // the others may not know of the switch yet
  if (pipeline_.connected()) {
    // Replaced: the read in progress fails, and the calls in flight are handled as after any
    // lost connection (those that may be sent again go to the master found next).
    abandoned_ = {make_error_code(errc::connection_lost),
                  "a sentinel named " + master.address() + " the master in place of Redis at " +
                      server_.address() +
                      ": the connection was closed, and the sentinels are asked for the master "
                      "again"};
    std::error_code ignored;
    socket_.close(ignored);
  } else {
    backoff_timer_.cancel();  // a reconnect waiting for its delay tries now
  }
}

void ServerConnection::stop_watches() {
  for (const auto& watch : watches_)
    watch->stop();
}

}  // namespace leasehold::detail
