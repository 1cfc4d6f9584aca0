#include "server_connection.hpp"

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/dispatch.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include "client_operations.hpp"
#include "leasehold/detail/asio_compat.hpp"
#include "leasehold/observer.hpp"
#include "subscriber.hpp"
#include "tell_observer.hpp"
#include "tls.hpp"

namespace leasehold::detail {
namespace {

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
  if (discovery_)
    watch_sentinels(discovery_->sentinels());
}

std::unique_ptr<Operation> ServerConnection::prepare(std::unique_ptr<Operation> operation) {
  if ((options_.replica_acks > 0 || options_.safe_failover) && grants_leases(*operation)) {
    operation = with_replica_acks(std::move(operation), options_.replica_acks,
                                  options_.replica_ack_timeout, options_.safe_failover);
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
  stop_watches();
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
  if (abandoned_.error)  // the socket was closed on purpose
    return std::exchange(abandoned_, Failure{});
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
    abandoned_ = std::move(*silence);
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
