// How a ServerConnection connects: finding the master behind Sentinel, resolving and connecting
// the socket, the TLS session, and the setup's exchange (Handshake). One watchdog bounds it all;
// the loops that carry calls once connected are in server_connection.cpp.
#include "server_connection.hpp"

#include <algorithm>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/redirect_error.hpp>
#include <asio/write.hpp>
#include <type_traits>

#include "handshake.hpp"
#include "sentinel_discovery.hpp"
#include "tls.hpp"

namespace leasehold::detail {

// Writes `request`, then reads what comes into `reader` until `answer(reader)` gives a value.
template <class Answer>
auto ServerConnection::exchange(Link link, std::string_view request, codec::ReplyReader& reader,
                                Answer answer, std::error_code& ec)
    -> Awaitable<std::invoke_result_t<Answer&, codec::ReplyReader&>> {
  if (link.tls)
    co_await asio::async_write(*link.tls, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(use_awaitable, ec));
  else
    co_await asio::async_write(link.socket, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(use_awaitable, ec));
  while (!ec) {
    if (auto answered = answer(reader))
      co_return answered;
    const std::size_t n =
        link.tls ? co_await link.tls->async_read_some(asio::buffer(link.buffer),
                                                      asio::redirect_error(use_awaitable, ec))
                 : co_await link.socket.async_read_some(asio::buffer(link.buffer),
                                                        asio::redirect_error(use_awaitable, ec));
    if (!ec)
      reader.feed(link.buffer.data(), n);
  }
  co_return std::nullopt;
}

ServerConnection::Awaitable<Failure> ServerConnection::connect_once() {
  reader_ = std::make_unique<codec::ReplyReader>();
  std::error_code ec;
  socket_.close(ec);
  tls_.reset();

  // One watchdog bounds finding the master, resolving, connecting and the handshake: closing the
  // socket (and cancelling the resolver) makes whatever is pending complete with an error.
  auto resolver = std::make_shared<Resolver>(strand_);
  auto timed_out = std::make_shared<bool>(false);
  Timer watchdog(strand_);
  watchdog.expires_after(options_.connect_timeout);
  watchdog.async_wait([this, self = shared_from_this(), resolver, timed_out](std::error_code e) {
    if (e || *timed_out)
      return;
    *timed_out = true;
    resolver->cancel();
    std::error_code ignored;
    socket_.close(ignored);
    // A name lookup in progress cannot be interrupted: tell the waiters now, not when it ends.
    notify_connect_waiters({make_error_code(errc::connect_timeout), connect_timeout_detail()});
  });
  auto finish = [&](Failure failure) {
    if (*timed_out)
      return Failure{make_error_code(errc::connect_timeout), connect_timeout_detail()};
    *timed_out = true;  // disarms the watchdog if its completion is already queued
    watchdog.cancel();
    return failure;
  };

  const std::uint64_t other_masters_named = other_masters_named_;
  if (discovery_) {
    if (Failure failure = co_await find_master(resolver, timed_out))
      co_return finish(std::move(failure));
  }
  if (Failure failure = co_await open_stream(own_link(), server_, "Redis", *resolver, *timed_out))
    co_return finish(std::move(failure));
  if (closed())
    co_return finish({make_error_code(errc::closed), "the client was closed"});
  Failure failure = co_await handshake();
  // A watched sentinel's event named another master while this one was found and checked: a
  // switch the sentinel asked may not have known of yet.
  if (!failure && other_masters_named != other_masters_named_ && named_master_ &&
      !reaches(*named_master_)) {
    failure = {make_error_code(errc::connect_failed),
               "a sentinel named " + named_master_->address() + " the master while connecting to " +
                   server_.address() + "; the sentinels are asked again"};
  }
  co_return finish(std::move(failure));
}

ServerConnection::Awaitable<Failure> ServerConnection::open_stream(Link link, const RedisUrl& where,
                                                                   std::string_view what,
                                                                   Resolver& resolver,
                                                                   const bool& timed_out) {
  const std::string at = std::string(what) + " at " + where.address();
  std::vector<asio::generic::stream_protocol::endpoint> endpoints;
  std::error_code ec;
  if (where.transport == RedisUrl::Transport::unix_socket) {
    try {
      endpoints.emplace_back(asio::local::stream_protocol::endpoint(where.path));
    } catch (const std::system_error& e) {
      co_return Failure{
          make_error_code(errc::connect_failed),
          "cannot use the unix socket path '" + where.path + "': " + e.code().message()};
    }
  } else {
    auto results = co_await resolver.async_resolve(where.host, std::to_string(where.port),
                                                   asio::redirect_error(use_awaitable, ec));
    if (ec) {
      co_return Failure{
          make_error_code(errc::connect_failed),
          "cannot resolve the host '" + where.host + "' of " + at + ": " + ec.message()};
    }
    for (const auto& entry : results)
      endpoints.emplace_back(entry.endpoint());
  }

  ec = asio::error::host_not_found;
  for (const auto& endpoint : endpoints) {
    std::error_code ignored;
    link.socket.close(ignored);
    if (timed_out || closed())
      break;
    link.socket.open(endpoint.protocol(), ec);
    if (ec)
      continue;
    co_await link.socket.async_connect(endpoint, asio::redirect_error(use_awaitable, ec));
    if (!ec)
      break;
  }
  if (ec) {
    co_return Failure{make_error_code(errc::connect_failed),
                      "could not connect to " + at + ": " + ec.message()};
  }
  if (where.transport != RedisUrl::Transport::unix_socket) {
    std::error_code ignored;
    link.socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    link.socket.set_option(asio::socket_base::keep_alive(true), ignored);
  }
  // Calls are written straight from the strand (send_waiting): a write must never block it.
  link.socket.non_blocking(true, ec);
  if (ec) {
    co_return Failure{make_error_code(errc::connect_failed),
                      "could not connect to " + at + ": " + ec.message()};
  }
  if (closed())
    co_return Failure{make_error_code(errc::closed), "the client was closed"};
  if (tls_context_)
    co_return co_await tls_handshake(link, where);
  co_return Failure{};
}

ServerConnection::Awaitable<Failure> ServerConnection::find_master(
    const std::shared_ptr<Resolver>& resolver, const std::shared_ptr<bool>& timed_out) {
  const std::vector<RedisUrl::Endpoint> round = discovery_->start_round();
  // Short: a sentinel that does not answer at once is passed over for the next.
  const std::chrono::milliseconds limit =
      std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                     options_.connect_timeout / static_cast<int>(round.size() + 1)),
                 std::chrono::milliseconds(50), std::chrono::milliseconds(500));
  for (const RedisUrl::Endpoint& sentinel : round) {
    if (*timed_out || closed())
      break;
    auto late = std::make_shared<bool>(false);
    auto done = std::make_shared<bool>(false);
    Timer timer(strand_);
    timer.expires_after(limit);
    timer.async_wait([this, self = shared_from_this(), resolver, late, done](std::error_code e) {
      if (e || *done)
        return;
      *late = true;
      resolver->cancel();
      std::error_code ignored;
      socket_.close(ignored);
    });
    Failure failure = co_await open_stream(own_link(), url_.node(sentinel), "the sentinel",
                                           *resolver, *timed_out);
    std::optional<SentinelDiscovery::Answer> answer;
    codec::ReplyReader reader;
    if (!failure) {
      answer = co_await ask_sentinel(own_link(), *discovery_, discovery_->request(), reader,
                                     sentinel, failure);
    }
    *done = true;
    timer.cancel();
    std::error_code ignored;
    socket_.close(ignored);
    tls_.reset();
    if (answer && answer->master) {
      server_ = url_.node(*answer->master);
      if (answer->replicas)
        replicas_known_ = answer->replicas;
      watch_sentinels(discovery_->sentinels());  // those it told of too
      co_return Failure{};
    }
    if (!answer) {
      discovery_->unreachable(*late ? "the sentinel at " + sentinel.address() +
                                          " did not answer within " +
                                          std::to_string(limit.count()) + " ms"
                                    : failure.detail);
    }
  }
  co_return discovery_->round_failure();
}

ServerConnection::Awaitable<std::optional<SentinelDiscovery::Answer>>
ServerConnection::ask_sentinel(Link link, SentinelDiscovery& rounds, std::string_view request,
                               codec::ReplyReader& reader, const RedisUrl::Endpoint& sentinel,
                               Failure& failure) {
  rounds.asking(sentinel);
  std::error_code ec;
  std::optional<SentinelDiscovery::Answer> answer = co_await exchange(
      link, request, reader,
      [&rounds](codec::ReplyReader& replies) { return rounds.on_bytes(replies); }, ec);
  if (!answer) {
    failure = {
        make_error_code(errc::connect_failed),
        "the connection to the sentinel at " + sentinel.address() + " failed: " + ec.message()};
  }
  co_return answer;
}

std::string ServerConnection::connect_timeout_detail() const {
  std::string detail = "connecting to Redis at " + server_.address() + " took longer than " +
                       std::to_string(options_.connect_timeout.count()) + " ms";
  // A plain Redis port waits for the end of a command line that a TLS hello never sends.
  if (tls_handshaking_)
    detail += " during the TLS handshake; check that the port takes TLS (else use redis://)";
  return detail;
}

ServerConnection::Awaitable<Failure> ServerConnection::tls_handshake(Link link,
                                                                     const RedisUrl& where) {
  std::optional<TlsStream>& tls = link.tls;
  tls.emplace(link.socket, *tls_context_);
  const std::string& name =
      options_.tls.server_name.empty() ? where.host : options_.tls.server_name;
  if (!expect_server_name(tls->native_handle(), name)) {
    co_return Failure{make_error_code(errc::tls_failed),
                      "cannot check the certificate of " + where.address() + " against the name '" +
                          name + "'; set ClientOptions::tls.server_name"};
  }
  std::error_code ec;
  // What a connect timeout names: the connection's own handshake, not a sentinel watch's.
  const bool own = &link.socket == &socket_;
  if (own)
    tls_handshaking_ = true;
  co_await tls->async_handshake(asio::ssl::stream_base::client,
                                asio::redirect_error(use_awaitable, ec));
  if (own)
    tls_handshaking_ = false;
  if (!ec)
    co_return Failure{};
  const std::string why = describe_tls_failure(tls->native_handle(), ec);
  if (why.empty()) {
    co_return Failure{make_error_code(errc::connect_failed),
                      "the connection to " + where.address() +
                          " failed during the TLS handshake: " + ec.message()};
  }
  co_return Failure{make_error_code(errc::tls_failed),
                    "the TLS handshake with " + where.address() + " failed: " + why};
}

ServerConnection::Awaitable<Failure> ServerConnection::handshake() {
  // Behind Sentinel, the server must be the master it was named (ROLE).
  Handshake handshake(server_, options_.client_name, discovery_ != nullptr);
  std::error_code ec;
  std::optional<Failure> verdict = co_await exchange(
      own_link(), handshake.request(), *reader_,
      [&handshake](codec::ReplyReader& replies) { return handshake.on_bytes(replies); }, ec);
  if (!verdict) {
    co_return handshake.broken(
        ec, tls_.has_value(),
        tls_ ? describe_tls_failure(tls_->native_handle(), ec) : std::string(),
        !options_.tls.cert_file.empty());
  }
  if (!*verdict && handshake.server_clock_offset())
    note_server_clock_offset(*handshake.server_clock_offset());
  if (!*verdict) {
    const std::optional<int> major = handshake.server_major_version();
    pipeline_.use_redis6_forms(server_.compat == RedisUrl::Compat::redis6 || (major && *major < 7));
  }
  co_return std::move(*verdict);
}

}  // namespace leasehold::detail
