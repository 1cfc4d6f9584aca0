#include "server_connection.hpp"

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/dispatch.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include "client_operations.hpp"
#include "handshake.hpp"
#include "leasehold/detail/asio_compat.hpp"
#include "leasehold/observer.hpp"
#include "sentinel_discovery.hpp"
#include "subscriber.hpp"
#include "tls.hpp"

namespace leasehold::detail {
namespace {

constexpr asio::use_awaitable_t<ServerConnection::Strand> use_awaitable;
using namespace asio_compat::awaitable_operators;

constexpr std::size_t kReadChunk = 64 * 1024;

// A reply by which a server says it is no longer a master: READONLY (also from within a
// script), or WAIT refused on a replica.
bool says_demoted(const Reply& reply) {
  return reply.is_error() &&
         (reply.str.find("READONLY") != std::string::npos ||
          reply.str.find("WAIT cannot be used with replica instances") != std::string::npos);
}

void rethrow_unexpected(std::exception_ptr error) {
  // The loops report failures as values; an exception here is a bug in leasehold.
  if (error)
    std::rethrow_exception(error);
}

}  // namespace

ServerConnection::ServerConnection(asio::io_context::executor_type executor, RedisUrl url,
                                   ClientOptions options, TlsContext tls)
    : ServerConnection(asio::make_strand(std::move(executor)), std::move(url), std::move(options),
                       std::move(tls)) {}

ServerConnection::ServerConnection(Strand strand, RedisUrl url, ClientOptions options,
                                   TlsContext tls)
    : TransportBase(std::move(strand), std::move(url), std::move(options)),
      socket_(strand_),
      tls_context_(std::move(tls)),
      writer_wakeup_(strand_),
      expiry_timer_(strand_, Clock::time_point::max()),
      backoff_timer_(strand_),
      read_chain_end_(strand_, Clock::time_point::max()),
      read_buffer_(kReadChunk),
      pipeline_(*this, url_.address(), options_.command_timeout),
      reconnect_(options_.reconnect_delay_min, options_.reconnect_delay_max,
                 std::random_device{}()),
      server_(url_) {
  if (url_.transport == RedisUrl::Transport::sentinel)
    discovery_ = std::make_unique<SentinelDiscovery>(url_);
}

void ServerConnection::start() {
  asio::co_spawn(strand_, run(), rethrow_unexpected);
  asio::co_spawn(strand_, expire_loop(), rethrow_unexpected);
}

std::unique_ptr<Operation> ServerConnection::prepare(std::unique_ptr<Operation> operation) {
  if (options_.replica_acks > 0 && grants_leases(*operation)) {
    operation = with_replica_acks(std::move(operation), options_.replica_acks,
                                  options_.replica_ack_timeout);
  }
  return operation;
}

void ServerConnection::accept(std::unique_ptr<Operation> operation) {
  const bool idle = pipeline_.idle();
  pipeline_.push(std::move(operation));
  arm_expiry();
  if (delivering_)
    return;  // the read loop sends it with the other calls its replies caused
  if (idle)
    send_waiting();  // nothing to wait for: written before the caller's call returns
  else
    wake_writer();  // the writer sends it with whatever else queues until it runs
}

void ServerConnection::cancel(std::uint64_t id, asio::cancellation_type type) {
  // A call that leaves the queue may leave the timer armed early: it then fires for nothing.
  if (const std::optional<Pipeline::CancelScope> scope = cancel_scope(type))
    pipeline_.cancel(id, *scope);
}

void ServerConnection::send_waiting() {
  const std::string_view bytes = pipeline_.write();
  if (bytes.empty())
    return;  // not yet, or the writer is at work and sends the queue when done
  // The socket is in non-blocking mode: this takes what fits in the socket's buffer now.
  std::error_code ec;
  const std::size_t written =
      tls_ ? 0 : socket_.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
  pipeline_.written(written);
  // The rest (or all of it, after an error, which the writer then meets and reports, or under
  // TLS) is the writer's to send.
  if (!pipeline_.unsent().empty())
    wake_writer();
}

void ServerConnection::wake_writer() {
  if (writer_waiting_)
    writer_wakeup_.cancel();
}

Notifications& ServerConnection::notifications() {
  if (!subscriber_) {
    subscriber_ = std::make_shared<Subscriber>(strand_, url_, options_, tls_context_);
    if (!open())
      subscriber_->close();
  }
  return *subscriber_;
}

void ServerConnection::shut_down(const Failure& closed) {
  if (subscriber_)
    subscriber_->close();
  stop_io();
  fail_everything(closed);
}

void ServerConnection::stop_io() {
  std::error_code ignored;
  socket_.close(ignored);
  writer_wakeup_.cancel();
  expiry_timer_.cancel();
  backoff_timer_.cancel();
}

void ServerConnection::retire() {
  if (closed())
    return;
  mark_closed();
  if (subscriber_)
    subscriber_->close();
  stop_io();
  pipeline_.retire(route_again_error(),
                   "the cluster node " + url_.address() +
                       " stopped serving the call's slot with the call in flight; it may or may "
                       "not have run");
  notify_connect_waiters({make_error_code(errc::closed), "the cluster node left the cluster"});
}

ServerConnection::Awaitable<void> ServerConnection::run() {
  auto self = shared_from_this();  // keeps the state alive for as long as the loop runs
  while (!closed()) {
    Failure failure = co_await connect_once();
    if (closed())
      break;
    std::chrono::milliseconds delay{0};
    if (!failure.error) {
      pipeline_.on_connected(Clock::now());
      const bool first_connection = reconnect_.on_connected();
      notify_connect_waiters({});
      if (connection_observer_)
        connection_observer_(true);
      if (first_connection && options_.warn_on_eviction_policy)
        submit(eviction_policy_check(server_.address()));
      Failure read_failure;
      Failure write_failure;
      co_await (read_loop(read_failure) || write_loop(write_failure));
      std::error_code ignored;
      socket_.close(ignored);
      if (closed())
        break;
      const Failure& lost = read_failure.error ? read_failure : write_failure;
      pipeline_.on_lost(lost);
      const std::string server = server_.address();
      detail::tell(options_.observer.get(), &Observer::on_reconnect,
                   ReconnectEvent{server, lost.error});
      if (connection_observer_)
        connection_observer_(false);
      delay = reconnect_.on_lost();
    } else {
      notify_connect_waiters(failure);
      pipeline_.on_connect_failed(failure);
      const std::optional<std::chrono::milliseconds> next = reconnect_.on_attempt_failed(failure);
      if (!next) {
        set_fatal(failure);
        fail_everything(failure);
        break;
      }
      delay = *next;
    }
    backoff_timer_.expires_after(delay);
    std::error_code ignored;
    co_await backoff_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
  }
  std::error_code ignored;
  socket_.close(ignored);
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

  if (discovery_) {
    if (Failure failure = co_await find_master(resolver, timed_out))
      co_return finish(std::move(failure));
  }
  if (Failure failure = co_await open_stream(server_, "Redis", *resolver, *timed_out))
    co_return finish(std::move(failure));
  if (closed())
    co_return finish({make_error_code(errc::closed), "the client was closed"});
  Failure failure = co_await handshake();
  co_return finish(std::move(failure));
}

ServerConnection::Awaitable<Failure> ServerConnection::open_stream(const RedisUrl& where,
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
    socket_.close(ignored);
    if (timed_out || closed())
      break;
    socket_.open(endpoint.protocol(), ec);
    if (ec)
      continue;
    co_await socket_.async_connect(endpoint, asio::redirect_error(use_awaitable, ec));
    if (!ec)
      break;
  }
  if (ec) {
    co_return Failure{make_error_code(errc::connect_failed),
                      "could not connect to " + at + ": " + ec.message()};
  }
  if (where.transport != RedisUrl::Transport::unix_socket) {
    std::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  }
  // Calls are written straight from the strand (send_waiting): a write must never block it.
  socket_.non_blocking(true, ec);
  if (ec) {
    co_return Failure{make_error_code(errc::connect_failed),
                      "could not connect to " + at + ": " + ec.message()};
  }
  if (closed())
    co_return Failure{make_error_code(errc::closed), "the client was closed"};
  if (tls_context_)
    co_return co_await tls_handshake(where);
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
    discovery_->asking(sentinel);
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
    Failure failure =
        co_await open_stream(url_.node(sentinel), "the sentinel", *resolver, *timed_out);
    std::optional<SentinelDiscovery::Answer> answer;
    if (!failure)
      answer = co_await ask_sentinel(sentinel, failure);
    *done = true;
    timer.cancel();
    std::error_code ignored;
    socket_.close(ignored);
    tls_.reset();
    if (answer && answer->master) {
      server_ = url_.node(*answer->master);
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
ServerConnection::ask_sentinel(const RedisUrl::Endpoint& sentinel, Failure& failure) {
  codec::ReplyReader reader;
  const std::string_view request = discovery_->request();
  std::error_code ec;
  if (tls_)
    co_await asio::async_write(*tls_, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(use_awaitable, ec));
  else
    co_await asio::async_write(socket_, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(use_awaitable, ec));
  while (!ec) {
    if (std::optional<SentinelDiscovery::Answer> answer = discovery_->on_bytes(reader))
      co_return answer;
    const std::size_t n =
        tls_ ? co_await tls_->async_read_some(asio::buffer(read_buffer_),
                                              asio::redirect_error(use_awaitable, ec))
             : co_await socket_.async_read_some(asio::buffer(read_buffer_),
                                                asio::redirect_error(use_awaitable, ec));
    if (!ec)
      reader.feed(read_buffer_.data(), n);
  }
  failure = {
      make_error_code(errc::connect_failed),
      "the connection to the sentinel at " + sentinel.address() + " failed: " + ec.message()};
  co_return std::nullopt;
}

std::string ServerConnection::connect_timeout_detail() const {
  std::string detail = "connecting to Redis at " + server_.address() + " took longer than " +
                       std::to_string(options_.connect_timeout.count()) + " ms";
  // A plain Redis port waits for the end of a command line that a TLS hello never sends.
  if (tls_handshaking_)
    detail += " during the TLS handshake; check that the port takes TLS (else use redis://)";
  return detail;
}

ServerConnection::Awaitable<Failure> ServerConnection::tls_handshake(const RedisUrl& where) {
  tls_.emplace(socket_, *tls_context_);
  const std::string& name =
      options_.tls.server_name.empty() ? where.host : options_.tls.server_name;
  if (!expect_server_name(tls_->native_handle(), name)) {
    co_return Failure{make_error_code(errc::tls_failed),
                      "cannot check the certificate of " + where.address() + " against the name '" +
                          name + "'; set ClientOptions::tls.server_name"};
  }
  std::error_code ec;
  tls_handshaking_ = true;
  co_await tls_->async_handshake(asio::ssl::stream_base::client,
                                 asio::redirect_error(use_awaitable, ec));
  tls_handshaking_ = false;
  if (!ec)
    co_return Failure{};
  const std::string why = describe_tls_failure(tls_->native_handle(), ec);
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
  const std::string_view request = handshake.request();
  if (tls_)
    co_await asio::async_write(*tls_, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(use_awaitable, ec));
  else
    co_await asio::async_write(socket_, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(use_awaitable, ec));
  while (!ec) {
    if (std::optional<Failure> verdict = handshake.on_bytes(*reader_)) {
      if (!*verdict && handshake.server_clock_offset())
        note_server_clock_offset(*handshake.server_clock_offset());
      co_return std::move(*verdict);
    }
    const std::size_t n =
        tls_ ? co_await tls_->async_read_some(asio::buffer(read_buffer_),
                                              asio::redirect_error(use_awaitable, ec))
             : co_await socket_.async_read_some(asio::buffer(read_buffer_),
                                                asio::redirect_error(use_awaitable, ec));
    if (!ec)
      reader_->feed(read_buffer_.data(), n);
  }
  co_return handshake.broken(ec, tls_.has_value(),
                             tls_ ? describe_tls_failure(tls_->native_handle(), ec) : std::string(),
                             !options_.tls.cert_file.empty());
}

ServerConnection::Awaitable<void> ServerConnection::read_loop(Failure& failure) {
  if (!tls_) {
    read_chain_ended_ = false;
    read_chain_end_.expires_at(Clock::time_point::max());
    start_read();
    // Until the chain ends, or the write loop does (then run() closes the socket, and the read
    // in progress completes into a chain that is no longer current).
    std::error_code ignored;
    if (!read_chain_ended_)
      co_await read_chain_end_.async_wait(asio::redirect_error(use_awaitable, ignored));
    ++read_chain_;
    failure = std::move(read_chain_failure_);
    read_chain_failure_ = {};
    co_return;
  }
  // TLS: an SSL stream's reads are composed operations; a coroutine reads them.
  for (;;) {
    std::error_code ec;
    const std::size_t n = co_await tls_->async_read_some(asio::buffer(read_buffer_),
                                                         asio::redirect_error(use_awaitable, ec));
    if (ec) {
      failure = lost_while_reading(ec);
      co_return;
    }
    if (!handle_read(n, failure))
      co_return;
  }
}

void ServerConnection::start_read() {
  // No associated executor: the handler runs on the socket's, the strand.
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [self = self(), chain = read_chain_](std::error_code ec, std::size_t n) {
                            self->on_read(ec, n, chain);
                          });
}

void ServerConnection::on_read(std::error_code ec, std::size_t size, std::uint64_t chain) {
  if (chain != read_chain_)
    return;  // read_loop has ended; so has this connection
  Failure failure;
  if (ec)
    failure = lost_while_reading(ec);
  else if (handle_read(size, failure)) {
    start_read();
    return;
  }
  read_chain_failure_ = std::move(failure);
  read_chain_ended_ = true;
  read_chain_end_.cancel();
}

Failure ServerConnection::lost_while_reading(std::error_code ec) {
  if (silence_.error)  // the socket was closed because the server fell silent
    return std::exchange(silence_, Failure{});
  return {make_error_code(errc::connection_lost),
          "the connection to Redis at " + server_.address() + " was lost (" +
              (ec == asio::error::eof ? std::string("closed by the server") : ec.message()) +
              ") with the call in flight; it may or may not have run"};
}

bool ServerConnection::handle_read(std::size_t size, Failure& failure) {
  pipeline_.on_read(Clock::now());
  reader_->feed(read_buffer_.data(), size);
  // The replies resume callers, whose next calls queue in the pipeline. They are sent as the
  // read goes on (writes_after_reply()): the server works on those while this loop parses the
  // rest, instead of the two taking turns on whole reads (a read can hold hundreds of replies).
  delivering_ = true;
  std::size_t delivered = 0;
  for (;;) {
    std::error_code ec;
    Reply* reply = reader_->next(ec);
    // Behind Sentinel, a demoted master is left at once, before its answer is taken: the call
    // it refused did not run, and goes to the master the next connection finds if it may be sent
    // again (acquires, extends); others end as after any lost connection.
    if (!ec && reply && discovery_ && says_demoted(*reply)) {
      delivering_ = false;
      failure = {make_error_code(errc::connection_lost),
                 "Redis at " + server_.address() +
                     " is no longer the master (it answered as a replica): the connection was "
                     "closed, and the sentinels are asked for the master again"};
      return false;
    }
    if (ec || (reply && !pipeline_.on_reply(std::move(*reply)))) {
      delivering_ = false;
      failure = {
          make_error_code(errc::protocol_error),
          ec ? "Redis at " + server_.address() + " sent a malformed reply: " + reader_->error_text()
             : "Redis at " + server_.address() + " sent a reply nobody asked for"};
      return false;
    }
    if (!reply)
      break;
    if (writes_after_reply(++delivered))
      send_waiting();
  }
  delivering_ = false;
  send_waiting();
  arm_expiry();  // a script call re-sent as EVAL
  return true;
}

ServerConnection::Awaitable<void> ServerConnection::write_loop(Failure& failure) {
  for (;;) {
    if (pipeline_.unsent().empty())
      send_waiting();  // calls queued while connecting, or since the writer was woken
    const std::string_view unsent = pipeline_.unsent();
    if (unsent.empty()) {
      // Everything went out: wait until a call needs the writer.
      writer_waiting_ = true;
      writer_wakeup_.expires_at(Clock::time_point::max());
      std::error_code ignored;
      co_await writer_wakeup_.async_wait(asio::redirect_error(use_awaitable, ignored));
      writer_waiting_ = false;
      const auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none || closed())
        co_return;
      continue;
    }
    // The socket did not take it all at once: wait until it has.
    std::error_code ec;
    const auto buffer = asio::buffer(unsent.data(), unsent.size());
    if (tls_)
      co_await asio::async_write(*tls_, buffer, asio::redirect_error(use_awaitable, ec));
    else
      co_await asio::async_write(socket_, buffer, asio::redirect_error(use_awaitable, ec));
    if (ec) {
      failure = {make_error_code(errc::connection_lost),
                 "the connection to Redis at " + server_.address() + " failed while sending (" +
                     ec.message() + "); the call may or may not have run"};
      co_return;
    }
    pipeline_.sent_unsent();
  }
}

ServerConnection::Awaitable<void> ServerConnection::expire_loop() {
  auto self = shared_from_this();
  while (!closed()) {
    std::error_code ignored;
    co_await expiry_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
    if (closed())
      break;
    on_time();
  }
}

void ServerConnection::on_time() {
  if (std::optional<Failure> silence = pipeline_.on_time(Clock::now())) {
    // Replaced: the read in progress fails, and the calls in flight are handled as after any
    // lost connection.
    silence_ = std::move(*silence);
    std::error_code ignored;
    socket_.close(ignored);
  }
  if (pipeline_.wake_at() != expiry_timer_.expiry())
    expiry_timer_.expires_at(pipeline_.wake_at());
}

void ServerConnection::arm_expiry() {
  if (pipeline_.wake_at() < expiry_timer_.expiry())
    expiry_timer_.expires_at(pipeline_.wake_at());
}

void ServerConnection::fail_everything(const Failure& failure) {
  pipeline_.fail_all(failure);
  notify_connect_waiters(failure);
}

}  // namespace leasehold::detail
