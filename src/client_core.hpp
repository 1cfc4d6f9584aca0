// The transport: one pipelined connection to one Redis server, owned by a strand.
//
// Every member below is touched only on strand_. Public entry points (submit, when_connected,
// close) post to it, so they may be called from any thread.
//
// Operations queue in `waiting_`, move to `in_flight_` when written, and leave it when their last
// reply arrives. Every operation gets the same timeout, so deadlines grow along
// in_flight_ + waiting_; that order lets one timer expire them from the front. An operation that
// expires while in flight stays in in_flight_ (it is a prefix: `expired_in_flight_`) so that its
// replies, if they come, are matched and dropped.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "codec.hpp"
#include "leasehold/client.hpp"

namespace leasehold::detail {

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(asio::any_io_executor executor, RedisUrl url, ClientOptions options);

  // Starts the connect/reconnect loop. Call once, right after construction.
  void start();

  void submit(std::unique_ptr<Operation> operation);
  void when_connected(UniqueFunction<void(std::error_code, std::string)> callback);
  void close();

  const RedisUrl& url() const noexcept { return url_; }
  const ClientOptions& options() const noexcept { return options_; }
  const asio::strand<asio::any_io_executor>& strand() const noexcept { return strand_; }

 private:
  struct Failure {
    std::error_code error;
    std::string detail;
  };

  asio::awaitable<void> run();
  asio::awaitable<Failure> connect_once();
  asio::awaitable<Failure> handshake();
  asio::awaitable<void> read_loop(Failure& failure);
  asio::awaitable<void> write_loop(Failure& failure);
  asio::awaitable<void> expire_loop();

  void enqueue(std::unique_ptr<Operation> operation, bool at_front);
  void deliver(Reply reply);
  void finish(std::unique_ptr<Operation> operation);
  void expire_due(Clock::time_point now);
  void rearm_expiry();
  void fail_in_flight(const Failure& failure);
  void fail_everything(const Failure& failure);
  void notify_connect_waiters(const Failure& failure);
  std::chrono::milliseconds next_backoff(std::chrono::milliseconds current);

  const RedisUrl url_;
  const ClientOptions options_;
  asio::strand<asio::any_io_executor> strand_;
  asio::generic::stream_protocol::socket socket_;
  asio::steady_timer writer_wakeup_;
  asio::steady_timer expiry_timer_;
  asio::steady_timer backoff_timer_;
  std::unique_ptr<codec::ReplyReader> reader_;
  std::vector<char> read_buffer_;
  std::string write_buffer_;  // the bytes of the write in progress (its capacity is kept)

  std::deque<std::unique_ptr<Operation>> waiting_;
  std::deque<std::unique_ptr<Operation>> in_flight_;
  std::size_t expired_in_flight_ = 0;

  std::vector<UniqueFunction<void(std::error_code, std::string)>> connect_waiters_;
  bool connected_ = false;
  bool writer_idle_ = false;
  bool closed_ = false;
  Failure fatal_;  // set when the server refused our credentials or database: no more attempts
  std::minstd_rand jitter_;
};

}  // namespace leasehold::detail
