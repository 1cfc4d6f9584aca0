#include "client_core.hpp"

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
#include "leasehold/detail/asio_compat.hpp"
#include "tls.hpp"

namespace leasehold::detail {
namespace {

constexpr asio::use_awaitable_t<ClientCore::Strand> use_awaitable;
using namespace asio_compat::awaitable_operators;

constexpr std::size_t kReadChunk = 64 * 1024;
// How many replies the read loop delivers before it lets the writer send the calls they caused.
constexpr std::size_t kWriteChunk = 16;

bool is_fatal(std::error_code ec) {
  return ec == errc::auth_failed || ec == errc::select_failed || ec == errc::tls_failed;
}

bool starts_with_noscript(const Reply& reply) {
  return reply.is_error() && reply.str.starts_with("NOSCRIPT");
}

void rethrow_unexpected(std::exception_ptr error) {
  // The loops report failures as values; an exception here is a bug in leasehold.
  if (error)
    std::rethrow_exception(error);
}

}  // namespace

std::error_code route_again_error() noexcept {
  class Category final : public std::error_category {
   public:
    const char* name() const noexcept override { return "leasehold.transport"; }
    std::string message(int) const override {
      return "The call is to be routed again: the cluster node it was queued for left the "
             "cluster.";
    }
  };
  static const Category category;
  return {1, category};
}

void complete_later(std::shared_ptr<Transport> transport, std::unique_ptr<Operation> operation,
                    std::error_code error, std::string detail) {
  const auto& strand = transport->strand();
  asio::post(strand, [transport = std::move(transport), operation = std::move(operation), error,
                      detail = std::move(detail)]() mutable {
    operation->complete(*transport, error, std::move(detail));
  });
}

ClientCore::ClientCore(asio::io_context::executor_type executor, RedisUrl url,
                       ClientOptions options, TlsContext tls)
    : ClientCore(asio::make_strand(std::move(executor)), std::move(url), std::move(options),
                 std::move(tls)) {}

ClientCore::ClientCore(Strand strand, RedisUrl url, ClientOptions options, TlsContext tls)
    : url_(std::move(url)),
      options_(std::move(options)),
      strand_(std::move(strand)),
      socket_(strand_),
      tls_context_(std::move(tls)),
      writer_wakeup_(strand_),
      expiry_timer_(strand_, Clock::time_point::max()),
      backoff_timer_(strand_),
      read_chain_end_(strand_, Clock::time_point::max()),
      read_buffer_(kReadChunk),
      jitter_(std::random_device{}()) {}

void ClientCore::start() {
  asio::co_spawn(strand_, run(), rethrow_unexpected);
  asio::co_spawn(strand_, expire_loop(), rethrow_unexpected);
}

void ClientCore::submit(std::unique_ptr<Operation> operation) {
  if (operation->deadline == Clock::time_point{})
    operation->deadline = operation->sent + options_.command_timeout;
  if (options_.replica_acks > 0 && grants_leases(*operation)) {
    operation = with_replica_acks(std::move(operation), options_.replica_acks,
                                  options_.replica_ack_timeout);
  }
  if (strand_.running_in_this_thread()) {
    accept(std::move(operation));
    return;
  }
  // dispatch, not post: a thread that runs the executor enters the strand at once when it is
  // free (a coroutine's first call, a handler outside the strand), so that an idle connection
  // sends the call right away instead of after a trip through the scheduler's queue.
  asio::dispatch(strand_, [self = shared_from_this(), operation = std::move(operation)]() mutable {
    self->accept(std::move(operation));
  });
}

void ClientCore::accept(std::unique_ptr<Operation> operation) {
  if (closed_ || fatal_.error || operation->requests().empty()) {
    Failure failure = fatal_.error ? fatal_
                      : closed_    ? Failure{make_error_code(errc::closed), "the client was closed"}
                                   : Failure{};
    complete_later(shared_from_this(), std::move(operation), failure.error,
                   std::move(failure.detail));
    return;
  }
  const bool idle = in_flight_.empty() && waiting_.empty() && write_buffer_.empty();
  enqueue(std::move(operation));
  if (delivering_)
    return;  // the read loop sends it with the other calls its replies caused
  if (idle)
    send_waiting();  // nothing to wait for: written before the caller's call returns
  else
    wake_writer();  // the writer sends it with whatever else queues until it runs
}

void ClientCore::enqueue(std::unique_ptr<Operation> operation) {
  if (operation->deadline < expiry_timer_.expiry())
    expiry_timer_.expires_at(operation->deadline);
  waiting_.push_back(std::move(operation));
}

void ClientCore::send_waiting() {
  if (!connected_ || !write_buffer_.empty() || waiting_.empty())
    return;  // not yet, or the writer is at work and sends the queue when done
  if (fallbacks_waiting_ > 0 && !in_flight_.empty())
    return;  // script calls sent before the re-sent ones may still come back NOSCRIPT
  // A single request is written from where it is; several are copied into one buffer (a
  // sequence of buffers is sent at most 16 at a time: asio's limit per write_some).
  const bool single = waiting_.size() == 1 && waiting_.front()->requests().size() == 1;
  std::string_view bytes;
  if (single) {
    bytes = waiting_.front()->requests().front().bytes();
  } else {
    for (const std::unique_ptr<Operation>& operation : waiting_)
      for (const Request& request : operation->requests())
        write_buffer_ += request.bytes();
    bytes = write_buffer_;
  }
  while (!waiting_.empty()) {
    waiting_.front()->replies_received = 0;
    in_flight_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  fallbacks_waiting_ = 0;
  // The socket is in non-blocking mode: this takes what fits in the socket's buffer now.
  std::error_code ec;
  const std::size_t written =
      tls_ ? 0 : socket_.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
  if (written == bytes.size()) {
    write_buffer_.clear();
    return;
  }
  // The rest (or all of it, after an error, which the writer then meets and reports, or under
  // TLS) is the writer's to send.
  if (single)
    write_buffer_.assign(bytes.substr(written));
  else
    write_buffer_.erase(0, written);
  wake_writer();
}

void ClientCore::wake_writer() {
  if (writer_waiting_)
    writer_wakeup_.cancel();
}

void ClientCore::when_connected(UniqueFunction<void(std::error_code, std::string)> callback) {
  asio::post(strand_, [self = shared_from_this(), callback = std::move(callback)]() mutable {
    if (self->fatal_.error)
      callback(self->fatal_.error, self->fatal_.detail);
    else if (self->closed_)
      callback(make_error_code(errc::closed), "the client was closed");
    else if (self->connected_)
      callback({}, {});
    else
      self->connect_waiters_.push_back(std::move(callback));
  });
}

void ClientCore::close() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->closed_)
      return;
    self->closed_ = true;
    std::error_code ignored;
    self->socket_.close(ignored);
    self->writer_wakeup_.cancel();
    self->expiry_timer_.cancel();
    self->backoff_timer_.cancel();
    self->fail_everything({make_error_code(errc::closed), "the client was closed"});
  });
}

void ClientCore::retire() {
  if (closed_)
    return;
  closed_ = true;
  std::error_code ignored;
  socket_.close(ignored);
  writer_wakeup_.cancel();
  expiry_timer_.cancel();
  backoff_timer_.cancel();
  const std::string left = "the cluster node " + url_.address() +
                           " stopped serving the call's slot with the call in flight; it may or "
                           "may not have run";
  std::deque<std::unique_ptr<Operation>> in_flight = std::move(in_flight_);
  const std::size_t expired = expired_in_flight_;
  in_flight_.clear();
  expired_in_flight_ = 0;
  write_buffer_.clear();
  for (std::size_t i = expired; i < in_flight.size(); ++i) {
    if (in_flight[i]->retry_safe())
      in_flight[i]->complete(*this, route_again_error(), {});
    else
      in_flight[i]->complete(*this, make_error_code(errc::connection_lost), left);
  }
  std::deque<std::unique_ptr<Operation>> waiting = std::move(waiting_);
  waiting_.clear();
  fallbacks_waiting_ = 0;
  for (auto& operation : waiting)
    operation->complete(*this, route_again_error(), {});
  notify_connect_waiters({make_error_code(errc::closed), "the cluster node left the cluster"});
}

ClientCore::Awaitable<void> ClientCore::run() {
  auto self = shared_from_this();  // keeps the state alive for as long as the loop runs
  auto backoff = options_.reconnect_delay_min;
  while (!closed_) {
    Failure failure = co_await connect_once();
    if (closed_)
      break;
    if (!failure.error) {
      connected_ = true;
      read_time_ = Clock::now();  // the handshake's replies came: the server was there
      silent_since_.reset();
      backoff = options_.reconnect_delay_min;
      notify_connect_waiters({});
      if (options_.warn_on_eviction_policy && !eviction_policy_checked_) {
        eviction_policy_checked_ = true;
        submit(eviction_policy_check(url_.address()));
      }
      Failure read_failure;
      Failure write_failure;
      co_await (read_loop(read_failure) || write_loop(write_failure));
      connected_ = false;
      write_buffer_.clear();  // its calls are in in_flight_, failed or resent below
      std::error_code ignored;
      socket_.close(ignored);
      if (closed_)
        break;
      fail_in_flight(read_failure.error ? read_failure : write_failure);
    } else {
      notify_connect_waiters(failure);
      if (is_fatal(failure.error)) {
        fatal_ = failure;
        fail_everything(failure);
        break;
      }
    }
    backoff_timer_.expires_after(backoff);
    std::error_code ignored;
    co_await backoff_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
    backoff = next_backoff(backoff);
  }
  std::error_code ignored;
  socket_.close(ignored);
}

std::chrono::milliseconds ClientCore::next_backoff(std::chrono::milliseconds current) {
  // Double, capped, with up to 25% jitter so that many clients do not reconnect in lockstep.
  const auto doubled = std::min(current * 2, options_.reconnect_delay_max);
  const auto spread = std::max<std::int64_t>(1, doubled.count() / 4);
  return doubled - std::chrono::milliseconds(static_cast<std::int64_t>(jitter_() % spread));
}

ClientCore::Awaitable<ClientCore::Failure> ClientCore::connect_once() {
  reader_ = std::make_unique<codec::ReplyReader>();
  std::error_code ec;
  socket_.close(ec);
  tls_.reset();

  // One watchdog bounds resolving, connecting and the handshake: closing the socket (and
  // cancelling the resolver) makes whatever is pending complete with an error.
  auto resolver = std::make_shared<asio::ip::basic_resolver<asio::ip::tcp, Strand>>(strand_);
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

  std::vector<asio::generic::stream_protocol::endpoint> endpoints;
  if (url_.transport == RedisUrl::Transport::unix_socket) {
    try {
      endpoints.emplace_back(asio::local::stream_protocol::endpoint(url_.path));
    } catch (const std::system_error& e) {
      co_return finish(
          {make_error_code(errc::connect_failed),
           "cannot use the unix socket path '" + url_.path + "': " + e.code().message()});
    }
  } else {
    auto results = co_await resolver->async_resolve(url_.host, std::to_string(url_.port),
                                                    asio::redirect_error(use_awaitable, ec));
    if (ec) {
      co_return finish({make_error_code(errc::connect_failed),
                        "cannot resolve the Redis host '" + url_.host + "': " + ec.message()});
    }
    for (const auto& entry : results)
      endpoints.emplace_back(entry.endpoint());
  }

  ec = asio::error::host_not_found;
  for (const auto& endpoint : endpoints) {
    std::error_code ignored;
    socket_.close(ignored);
    if (*timed_out || closed_)
      break;
    socket_.open(endpoint.protocol(), ec);
    if (ec)
      continue;
    co_await socket_.async_connect(endpoint, asio::redirect_error(use_awaitable, ec));
    if (!ec)
      break;
  }
  if (ec) {
    co_return finish({make_error_code(errc::connect_failed),
                      "could not connect to Redis at " + url_.address() + ": " + ec.message()});
  }
  if (url_.transport == RedisUrl::Transport::tcp) {
    std::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  }
  // Calls are written straight from the strand (send_waiting): a write must never block it.
  socket_.non_blocking(true, ec);
  if (ec) {
    co_return finish({make_error_code(errc::connect_failed),
                      "could not connect to Redis at " + url_.address() + ": " + ec.message()});
  }
  if (closed_)
    co_return finish({make_error_code(errc::closed), "the client was closed"});
  if (tls_context_) {
    Failure failure = co_await tls_handshake();
    if (failure.error)
      co_return finish(std::move(failure));
  }
  Failure failure = co_await handshake();
  co_return finish(std::move(failure));
}

std::string ClientCore::connect_timeout_detail() const {
  std::string detail = "connecting to Redis at " + url_.address() + " took longer than " +
                       std::to_string(options_.connect_timeout.count()) + " ms";
  // A plain Redis port waits for the end of a command line that a TLS hello never sends.
  if (tls_handshaking_)
    detail += " during the TLS handshake; check that the port takes TLS (else use redis://)";
  return detail;
}

ClientCore::Awaitable<ClientCore::Failure> ClientCore::tls_handshake() {
  tls_.emplace(socket_, *tls_context_);
  const std::string& name = options_.tls.server_name.empty() ? url_.host : options_.tls.server_name;
  if (!expect_server_name(tls_->native_handle(), name)) {
    co_return Failure{make_error_code(errc::tls_failed),
                      "cannot check the certificate of Redis at " + url_.address() +
                          " against the name '" + name + "'; set ClientOptions::tls.server_name"};
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
                      "the connection to Redis at " + url_.address() +
                          " failed during the TLS handshake: " + ec.message()};
  }
  co_return Failure{make_error_code(errc::tls_failed),
                    "the TLS handshake with Redis at " + url_.address() + " failed: " + why};
}

ClientCore::Awaitable<ClientCore::Failure> ClientCore::handshake() {
  enum class Step { auth, select, set_name, ping };
  std::vector<Step> steps;
  std::string bytes;
  if (url_.has_password) {
    steps.push_back(Step::auth);
    bytes += url_.user.empty() ? Request::command({"AUTH", url_.password}).bytes()
                               : Request::command({"AUTH", url_.user, url_.password}).bytes();
  }
  const std::string db = std::to_string(url_.db);
  if (url_.db != 0) {
    steps.push_back(Step::select);
    bytes += Request::command({"SELECT", db}).bytes();
  }
  if (!options_.client_name.empty()) {
    steps.push_back(Step::set_name);
    bytes += Request::command({"CLIENT", "SETNAME", options_.client_name}).bytes();
  }
  // PING tells "needs a password" (NOAUTH) and "still loading" apart before any call is sent.
  steps.push_back(Step::ping);
  bytes += Request::command({"PING"}).bytes();

  std::error_code ec;
  if (tls_)
    co_await asio::async_write(*tls_, asio::buffer(bytes), asio::redirect_error(use_awaitable, ec));
  else
    co_await asio::async_write(socket_, asio::buffer(bytes),
                               asio::redirect_error(use_awaitable, ec));
  std::vector<Reply> replies;
  while (!ec && replies.size() < steps.size()) {
    std::error_code parse_error;
    while (replies.size() < steps.size()) {
      auto reply = reader_->next(parse_error);
      if (!reply)
        break;
      replies.push_back(std::move(*reply));
    }
    if (parse_error) {
      co_return Failure{make_error_code(errc::protocol_error),
                        "the server at " + url_.address() +
                            " does not speak the Redis protocol: " + reader_->error_text()};
    }
    if (replies.size() == steps.size())
      break;
    const std::size_t n =
        tls_ ? co_await tls_->async_read_some(asio::buffer(read_buffer_),
                                              asio::redirect_error(use_awaitable, ec))
             : co_await socket_.async_read_some(asio::buffer(read_buffer_),
                                                asio::redirect_error(use_awaitable, ec));
    if (!ec)
      reader_->feed(read_buffer_.data(), n);
  }
  // Under TLS 1.3 the server checks the client's certificate after the client's handshake is
  // done: its refusal arrives here, as the first read.
  if (ec && tls_) {
    const std::string why = describe_tls_failure(tls_->native_handle(), ec);
    if (!why.empty()) {
      co_return Failure{make_error_code(errc::tls_failed),
                        "Redis at " + url_.address() + " ended the TLS session while logging in: " +
                            why + " (does it want a client certificate? see ClientOptions::tls)"};
    }
  }
  if (ec) {
    // A TLS port closes a connection whose first bytes are not a TLS hello. Under TLS 1.3, a
    // server that wants a client certificate closes the connection after the handshake, and its
    // alert saying why may be lost to the reset.
    const bool closed = ec == asio::error::eof || ec == asio::error::connection_reset;
    std::string hint;
    if (closed && !tls_ && url_.transport == RedisUrl::Transport::tcp)
      hint = "; if the server takes TLS on this port, use rediss://";
    else if (closed && tls_ && options_.tls.cert_file.empty())
      hint =
          "; if the server wants a client certificate (Redis' tls-auth-clients, on by "
          "default), give one in ClientOptions::tls";
    co_return Failure{make_error_code(errc::connect_failed),
                      "the connection to Redis at " + url_.address() +
                          " failed while logging in: " + ec.message() + hint};
  }
  // Nothing else was asked: bytes after the setup's replies (a greeting, a reply too many) would
  // be taken for the reply to the first call.
  if (!reader_->idle()) {
    co_return Failure{make_error_code(errc::protocol_error),
                      "the server at " + url_.address() +
                          " sent more than the replies to the connection's setup; it may not be a "
                          "Redis server"};
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Reply& reply = replies[i];
    if (!reply.is_error()) {
      // Each step has one success reply. Any other means that unsolicited bytes (a greeting)
      // shifted the replies, and what is still to come would be taken for the first calls'.
      const std::string_view expected = steps[i] == Step::ping ? "PONG" : "OK";
      if (reply.type != Reply::Type::status || reply.str != expected) {
        co_return Failure{make_error_code(errc::protocol_error),
                          "the server at " + url_.address() +
                              " answered the connection's setup with " + to_string(reply) +
                              " where Redis answers " + std::string(expected) +
                              "; it may not be a Redis server"};
      }
      continue;
    }
    switch (steps[i]) {
      case Step::auth:
        co_return Failure{
            make_error_code(errc::auth_failed),
            "Redis at " + url_.address() + " refused to log in " +
                (url_.user.empty() ? "with the password" : "as user '" + url_.user + "'") +
                " from the URL: " + reply.str};
      case Step::select:
        co_return Failure{
            make_error_code(errc::select_failed),
            "Redis at " + url_.address() + " refused SELECT " + db + ": " + reply.str};
      case Step::set_name:
        break;  // a name is a courtesy; an ACL may forbid CLIENT SETNAME
      case Step::ping:
        if (reply.str.starts_with("NOAUTH")) {
          co_return Failure{make_error_code(errc::auth_failed),
                            "Redis at " + url_.address() +
                                " requires a password, and the URL gives none: " + reply.str};
        }
        if (reply.str.starts_with("LOADING")) {
          co_return Failure{make_error_code(errc::server_loading),
                            "Redis at " + url_.address() + " is loading its dataset"};
        }
        break;  // e.g. NOPERM for PING: calls will say what they lack
    }
  }
  co_return Failure{};
}

ClientCore::Awaitable<void> ClientCore::read_loop(Failure& failure) {
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

void ClientCore::start_read() {
  // No associated executor: the handler runs on the socket's, the strand.
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [self = shared_from_this(), chain = read_chain_](
                              std::error_code ec, std::size_t n) { self->on_read(ec, n, chain); });
}

void ClientCore::on_read(std::error_code ec, std::size_t size, std::uint64_t chain) {
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

ClientCore::Failure ClientCore::lost_while_reading(std::error_code ec) {
  if (silence_.error)  // the socket was closed because the server fell silent
    return std::exchange(silence_, Failure{});
  return {make_error_code(errc::connection_lost),
          "the connection to Redis at " + url_.address() + " was lost (" +
              (ec == asio::error::eof ? std::string("closed by the server") : ec.message()) +
              ") with the call in flight; it may or may not have run"};
}

bool ClientCore::handle_read(std::size_t size, Failure& failure) {
  read_time_ = Clock::now();
  reader_->feed(read_buffer_.data(), size);
  // The replies resume callers, whose next calls queue in waiting_. Every kWriteChunk replies
  // they are sent: the server works on those while this loop parses the rest, instead of the
  // two taking turns on whole reads (a read can hold hundreds of replies).
  delivering_ = true;
  std::size_t delivered = 0;
  for (;;) {
    std::error_code ec;
    Reply* reply = reader_->next(ec);
    if (ec || (reply && in_flight_.empty())) {
      delivering_ = false;
      failure = {
          make_error_code(errc::protocol_error),
          ec ? "Redis at " + url_.address() + " sent a malformed reply: " + reader_->error_text()
             : "Redis at " + url_.address() + " sent a reply nobody asked for"};
      return false;
    }
    if (!reply)
      break;
    deliver(std::move(*reply));
    if (++delivered == kWriteChunk) {
      delivered = 0;
      send_waiting();
    }
  }
  delivering_ = false;
  send_waiting();
  return true;
}

ClientCore::Awaitable<void> ClientCore::write_loop(Failure& failure) {
  for (;;) {
    if (write_buffer_.empty())
      send_waiting();  // calls queued while connecting, or since the writer was woken
    if (write_buffer_.empty()) {
      // Everything went out: wait until a call needs the writer.
      writer_waiting_ = true;
      writer_wakeup_.expires_at(Clock::time_point::max());
      std::error_code ignored;
      co_await writer_wakeup_.async_wait(asio::redirect_error(use_awaitable, ignored));
      writer_waiting_ = false;
      const auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none || closed_)
        co_return;
      continue;
    }
    // The socket did not take it all at once: wait until it has.
    std::error_code ec;
    if (tls_)
      co_await asio::async_write(*tls_, asio::buffer(write_buffer_),
                                 asio::redirect_error(use_awaitable, ec));
    else
      co_await asio::async_write(socket_, asio::buffer(write_buffer_),
                                 asio::redirect_error(use_awaitable, ec));
    if (ec) {
      failure = {make_error_code(errc::connection_lost),
                 "the connection to Redis at " + url_.address() + " failed while sending (" +
                     ec.message() + "); the call may or may not have run"};
      co_return;
    }
    write_buffer_.clear();
  }
}

void ClientCore::deliver(Reply&& reply) {
  Operation& front = *in_flight_.front();
  const std::size_t index = front.replies_received++;
  const bool expired = expired_in_flight_ > 0;  // its caller already got command_timeout
  if (!expired) {
    if (front.requests()[index].is_script() && starts_with_noscript(reply))
      front.noscript_replies.push_back(index);
    else
      front.on_reply(index, std::move(reply));
  }
  if (front.replies_received < front.requests().size())
    return;
  std::unique_ptr<Operation> done = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (expired)
    --expired_in_flight_;
  else
    finish(std::move(done));
}

void ClientCore::finish(std::unique_ptr<Operation> operation) {
  if (operation->noscript_replies.empty()) {
    operation->complete(*this, {}, {});
    return;
  }
  // Sent again ahead of everything queued, behind the script calls re-sent before it: its
  // deadline is older than any queued operation's, so the queue keeps deadlines in order.
  std::unique_ptr<Operation> fallback = resend_as_eval(std::move(operation));
  if (fallback->deadline < expiry_timer_.expiry())
    expiry_timer_.expires_at(fallback->deadline);
  waiting_.insert(waiting_.begin() + static_cast<std::ptrdiff_t>(fallbacks_waiting_),
                  std::move(fallback));
  ++fallbacks_waiting_;
}

ClientCore::Awaitable<void> ClientCore::expire_loop() {
  auto self = shared_from_this();
  while (!closed_) {
    std::error_code ignored;
    co_await expiry_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
    if (closed_)
      break;
    const Clock::time_point now = Clock::now();
    expire_due(now);
    check_silence(now);
    rearm_expiry();
  }
}

void ClientCore::rearm_expiry() {
  Clock::time_point next = Clock::time_point::max();
  if (expired_in_flight_ < in_flight_.size())
    next = in_flight_[expired_in_flight_]->deadline;
  else if (!waiting_.empty())
    next = waiting_.front()->deadline;
  if (silent_since_)
    next = std::min(next, *silent_since_ + silence_limit());
  if (next != expiry_timer_.expiry())
    expiry_timer_.expires_at(next);
}

void ClientCore::check_silence(Clock::time_point now) {
  if (!silent_since_)
    return;
  if (read_time_ > *silent_since_ || !connected_) {
    silent_since_.reset();  // a reply came after all, or the connection is gone anyway
    return;
  }
  if (now < *silent_since_ + silence_limit())
    return;
  // A paused server answers late; one that sent nothing for this long, with calls waiting, is
  // most likely gone without a FIN or RST (a dead host, a dropped route): replace the
  // connection. The read in progress fails, and the calls in flight are handled as after any
  // lost connection.
  silent_since_.reset();
  silence_ = {make_error_code(errc::connection_lost),
              "Redis at " + url_.address() + " sent nothing for " +
                  std::to_string(silence_limit().count()) +
                  " ms while calls waited for replies; the connection was replaced, and the calls "
                  "in flight on it may or may not have run"};
  std::error_code ignored;
  socket_.close(ignored);
}

void ClientCore::expire_due(Clock::time_point now) {
  const std::string timeout = std::to_string(options_.command_timeout.count()) + " ms";
  while (expired_in_flight_ < in_flight_.size() &&
         in_flight_[expired_in_flight_]->deadline <= now) {
    // Stays in in_flight_ so that its replies, when they come, are matched and dropped.
    Operation& operation = *in_flight_[expired_in_flight_];
    ++expired_in_flight_;
    if (read_time_ <= operation.sent && !silent_since_)
      silent_since_ = operation.sent;  // nothing has come since this call was made
    operation.complete(*this, make_error_code(errc::command_timeout),
                       "Redis at " + url_.address() + " did not answer within " + timeout +
                           "; the call was sent and may or may not have run");
  }
  while (!waiting_.empty() && waiting_.front()->deadline <= now) {
    std::unique_ptr<Operation> operation = std::move(waiting_.front());
    waiting_.pop_front();
    if (fallbacks_waiting_ > 0)
      --fallbacks_waiting_;
    operation->complete(*this, make_error_code(errc::command_timeout),
                        (connected_ ? "the call waited " + timeout + " to be sent to Redis at "
                                    : "no connection to Redis at ") +
                            url_.address() + (connected_ ? "" : " within " + timeout) +
                            "; the call was not sent");
  }
}

void ClientCore::fail_in_flight(const Failure& failure) {
  // Calls that may safely run twice go out again, in their order, ahead of the queue but behind
  // the re-sent script calls (which were sent before them); the others fail: they may or may not
  // have run.
  std::deque<std::unique_ptr<Operation>> resend;
  for (std::size_t i = expired_in_flight_; i < in_flight_.size(); ++i) {
    std::unique_ptr<Operation>& operation = in_flight_[i];
    if (operation->retry_safe()) {
      operation->noscript_replies.clear();
      resend.push_back(std::move(operation));
    } else {
      operation->complete(*this, failure.error, failure.detail);
    }
  }
  in_flight_.clear();
  expired_in_flight_ = 0;
  waiting_.insert(waiting_.begin() + static_cast<std::ptrdiff_t>(fallbacks_waiting_),
                  std::make_move_iterator(resend.begin()), std::make_move_iterator(resend.end()));
}

void ClientCore::fail_everything(const Failure& failure) {
  for (std::size_t i = expired_in_flight_; i < in_flight_.size(); ++i)
    in_flight_[i]->complete(*this, failure.error, failure.detail);
  in_flight_.clear();
  expired_in_flight_ = 0;
  std::deque<std::unique_ptr<Operation>> waiting = std::move(waiting_);
  waiting_.clear();
  fallbacks_waiting_ = 0;
  for (auto& operation : waiting)
    operation->complete(*this, failure.error, failure.detail);
  notify_connect_waiters(failure);
}

void ClientCore::notify_connect_waiters(const Failure& failure) {
  auto waiters = std::move(connect_waiters_);
  connect_waiters_.clear();
  for (auto& waiter : waiters)
    waiter(failure.error, failure.detail);
}

}  // namespace leasehold::detail
