// What a Client runs its calls on: one connection (ServerConnection) or a Redis Cluster
// (ClusterConnection). Operations (client.hpp) are handed to submit() and completed on the
// transport's strand.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "failure.hpp"

#include "leasehold/detail/notifications.hpp"
#include "leasehold/detail/operation.hpp"
#include "leasehold/detail/unique_function.hpp"
#include "leasehold/options.hpp"
#include "leasehold/url.hpp"

namespace leasehold::detail {

// The requests a client sends on its own account (send_without_waiting: an acquire's release
// after an unknown outcome, a waiter's leaving) that are neither answered nor failed yet: what a
// draining close (Client::close(drain)) waits for. Any thread.
class UnwatchedRequests {
 public:
  void add() {
    const std::lock_guard lock(mutex_);
    ++count_;
  }
  void remove() {
    {
      const std::lock_guard lock(mutex_);
      --count_;
    }
    none_left_.notify_all();
  }
  // False if `timeout` passed first.
  bool wait_for_none(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return none_left_.wait_for(lock, timeout, [this] { return count_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable none_left_;
  std::size_t count_ = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Shared with each unwatched request, which may outlive the transport that took it (a
  // cluster's node).
  const std::shared_ptr<UnwatchedRequests>& unwatched() const noexcept { return unwatched_; }

  // These three may be called from any thread.
  virtual void submit(std::unique_ptr<Operation> operation) = 0;
  virtual void when_connected(UniqueFunction<void(std::error_code, std::string)> callback) = 0;
  virtual void close() = 0;

  // On the strand: ends the call named `id` (Operation::id) with operation_aborted if it is
  // still going and `type` allows: terminal ends it even after it was sent (the acquire it holds
  // is cleaned up as for an unknown outcome); partial and total only before. Else does nothing.
  virtual void cancel(std::uint64_t id, asio::cancellation_type type) = 0;

  // On the strand: what tells this transport's waiters of the messages on their channels.
  virtual Notifications& notifications() = 0;

  // The time to count a reply as received at (see connection_now() in client.hpp).
  virtual Clock::time_point now() const noexcept = 0;
  virtual const RedisUrl& url() const noexcept = 0;
  virtual const ClientOptions& options() const noexcept = 0;
  // Where the transport's state lives.
  virtual const ConnectionStrand& strand() const noexcept = 0;
  // On the strand: how many replicas the server this transport writes to has, as far as it
  // knows (the sentinels' list); nothing when it does not know.
  virtual std::optional<int> replicas_known() const noexcept { return std::nullopt; }

 private:
  std::shared_ptr<UnwatchedRequests> unwatched_ = std::make_shared<UnwatchedRequests>();
};

// What every transport shares: where its state lives, its life (open, closed, fatal), the guard
// at submit(), and the callers waiting for it to be connected. A transport is open until
// close(), or until it turns fatal (the server refused the connection's credentials, database or
// TLS), which ends every call, waiting or later, with that failure.
//
// The derived transport routes and sends the calls that pass the guard (accept), says whether
// it is connected (ready), and shuts down once at close() (shut_down).
class TransportBase : public Transport, public std::enable_shared_from_this<TransportBase> {
 public:
  // An operation whose deadline is set keeps it (a cluster keeps the caller's deadline across
  // redirections); otherwise it is `sent` + the command timeout.
  void submit(std::unique_ptr<Operation> operation) final;
  void when_connected(UniqueFunction<void(std::error_code, std::string)> callback) final;
  void close() final;

  const RedisUrl& url() const noexcept final { return url_; }
  const ClientOptions& options() const noexcept final { return options_; }
  const ConnectionStrand& strand() const noexcept final { return strand_; }

 protected:
  TransportBase(ConnectionStrand strand, RedisUrl url, ClientOptions options);

  // On the caller's thread, before the operation goes to the strand: what the transport wraps
  // around every call.
  virtual std::unique_ptr<Operation> prepare(std::unique_ptr<Operation> operation) {
    return operation;
  }
  // On the strand, for an operation that passed the guard: the transport's to route and send.
  virtual void accept(std::unique_ptr<Operation> operation) = 0;
  // On the strand: connected, so that when_connected() answers at once.
  virtual bool ready() const = 0;
  // On the strand, once, at close(): stop, and fail every call with `closed`.
  virtual void shut_down(const Failure& closed) = 0;
  // Answers every caller waiting in when_connected(). A transport whose readiness needs more
  // than its own state (a cluster asks its nodes) overrides it.
  virtual void notify_connect_waiters(const Failure& failure);

  // Calls accept() for `operation` if the transport is open (on the strand), else completes it
  // with why it is not, through the strand's queue.
  void admit(std::unique_ptr<Operation> operation);
  std::vector<UniqueFunction<void(std::error_code, std::string)>> take_connect_waiters() {
    return std::exchange(connect_waiters_, {});
  }
  // Ends the transport for good: every later call fails with `failure`.
  void set_fatal(Failure failure) { fatal_ = std::move(failure); }
  const Failure& fatal() const noexcept { return fatal_; }
  bool closed() const noexcept { return closed_; }
  // Marks the transport closed without the close() sequence (a retired cluster node).
  void mark_closed() noexcept { closed_ = true; }
  // Open: neither closed nor fatal.
  bool open() const noexcept { return !closed_ && !fatal_.error; }

  const RedisUrl url_;
  const ClientOptions options_;
  ConnectionStrand strand_;

 private:
  std::vector<UniqueFunction<void(std::error_code, std::string)>> connect_waiters_;
  bool closed_ = false;
  Failure fatal_;
};

// Completes `operation` with `error` through the transport's strand queue, never from within the
// caller's own call: a caller that calls again on failure must not recurse.
void complete_later(std::shared_ptr<Transport> transport, std::unique_ptr<Operation> operation,
                    std::error_code error, std::string detail);

}  // namespace leasehold::detail
