// A connection to one Redis server that runs queries, sync or async.
//
//   leasehold::Client redis("redis://127.0.0.1:6380");          // its own I/O thread
//   redis.connect();                                            // optional: fail fast
//   leasehold::Reply r = redis.process(leasehold::Command{"PING"});
//
//   leasehold::Client redis(io.get_executor(), url);             // on your io_context
//   auto r = co_await redis.async_process(query, asio::use_awaitable);
//
// A sync call that fails throws Error, whose what() has the detail (the server's own message, the
// address...); an async call completes with the error code alone, or also fills a Diagnostics
// with that detail when given one: async_process(query, diagnostics, token).
//
// One pipelined connection carries every call: calls from any number of threads and coroutines are
// written in order (many per write when they queue up) and matched to replies in order. After a
// dropped connection it reconnects with backoff; calls in flight then fail with
// errc::connection_lost unless their request is retry-safe, and calls made while it reconnects wait
// up to the command timeout. A refused AUTH or SELECT is fatal: every call fails with it.
//
// A redis-cluster:// URL makes it a Redis Cluster client with the same API: one such connection
// per master, each call routed by the hash slot of its keys (docs/cluster.md).
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/detail/operation.hpp"
#include "leasehold/detail/unique_function.hpp"
#include "leasehold/error.hpp"
#include "leasehold/options.hpp"
#include "leasehold/query.hpp"
#include "leasehold/url.hpp"

namespace leasehold {

class Client;

namespace detail {
// The transport a client runs its calls on: for what runs beside its calls on its strand
// (waiting acquires).
std::shared_ptr<Transport> transport_of(const Client& client) noexcept;
}  // namespace detail

class Client {
 public:
  // A client with its own I/O thread.
  explicit Client(std::string_view url, ClientOptions options = {});
  explicit Client(RedisUrl url, ClientOptions options = {});
  // A client on the caller's executor, which the caller runs (async use; the sync calls work from
  // other threads while it runs): an io_context's executor or a strand of one (any other is an
  // Error, errc::invalid_argument). The connection runs on its own strand of that io_context.
  Client(asio::any_io_executor executor, std::string_view url, ClientOptions options = {});
  ~Client();  // close()s, never throws

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  const RedisUrl& url() const noexcept;
  const ClientOptions& options() const noexcept;
  // The executor on which the connection's state lives (a strand).
  asio::any_io_executor get_executor() const noexcept;

  // Waits for the next connection attempt's outcome (at once if connected). Calls made before do
  // not need it: they wait for the connection themselves, up to the command timeout.
  void connect();
  void connect(std::error_code& ec);

  template <asio::completion_token_for<void(std::error_code)> Token>
  auto async_connect(Token&& token) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [this](auto handler) {
          when_connected([work = completion_executor(handler), handler = std::move(handler)](
                             std::error_code ec, std::string) mutable {
            work.complete(std::move(handler), ec);
          });
        },
        token);
  }

  // Runs one query; throws Error on failure (including an error reply the query does not expect).
  template <Query Q>
  typename Q::result_type process(const Q& query) {
    std::error_code ec;
    std::string detail;
    auto result = process_one(query, ec, detail);
    throw_if(ec, detail);
    return result;
  }

  template <Query Q>
  typename Q::result_type process(const Q& query, std::error_code& ec) {
    std::string detail;
    return process_one(query, ec, detail);
  }

  // Runs a batch in one round trip; each query gets its own Result. Throws Error only when the
  // batch as a whole failed (no connection, timeout, ...).
  template <Query Q>
  std::vector<Result<typename Q::result_type>> process(std::span<const Q> batch) {
    std::error_code ec;
    std::string detail;
    auto results = process_batch(batch, ec, detail);
    throw_if(ec, detail);
    return results;
  }

  template <Query Q>
  std::vector<Result<typename Q::result_type>> process(std::span<const Q> batch,
                                                       std::error_code& ec) {
    std::string detail;
    return process_batch(batch, ec, detail);
  }

  template <Query Q>
  std::vector<Result<typename Q::result_type>> process(const std::vector<Q>& batch) {
    return process(std::span<const Q>(batch));
  }

  // Completion signature: void(std::error_code, Q::result_type).
  template <Query Q,
            asio::completion_token_for<void(std::error_code, typename Q::result_type)> Token>
  auto async_process(Q query, Token&& token) {
    return initiate_process(std::move(query), nullptr, std::forward<Token>(token));
  }

  // The same, and a failed call leaves in `diagnostics` the detail that the sync call's Error
  // adds to the code: the server's own message for an error reply, the address that could not be
  // reached, ... (see Diagnostics: it must outlive the call and is not touched until it
  // completed). With a token that throws (asio::use_awaitable), it is filled before the throw.
  template <Query Q,
            asio::completion_token_for<void(std::error_code, typename Q::result_type)> Token>
  auto async_process(Q query, Diagnostics& diagnostics, Token&& token) {
    return initiate_process(std::move(query), &diagnostics, std::forward<Token>(token));
  }

  // Completion signature: void(std::error_code, std::vector<Result<Q::result_type>>).
  template <Query Q, class Token>
  auto async_process(std::span<const Q> batch, Token&& token) {
    return initiate_batch(batch, nullptr, std::forward<Token>(token));
  }

  // The same; when the batch fails as a whole, `diagnostics` gets the detail (each query's own
  // failure carries its detail in its Result).
  template <Query Q, class Token>
  auto async_process(std::span<const Q> batch, Diagnostics& diagnostics, Token&& token) {
    return initiate_batch(batch, &diagnostics, std::forward<Token>(token));
  }

  // Fails every call in progress and every later one with errc::closed. Idempotent, never throws.
  void close() noexcept;
  // The same, once the requests the client sent on its own account are answered or failed —
  // the release of an acquire whose outcome was unknown (or cancelled after it was sent), a
  // waiter's leaving its queue — or `drain` has passed: for a program about to exit, which must
  // know that no lease it may have taken is left behind. Not on the client's I/O thread (it
  // closes at once there).
  void close(std::chrono::milliseconds drain) noexcept;

  // True on a thread where a blocking call would wait for itself (the thread that runs this
  // client's executor): use the async_ forms there.
  bool running_in_io_thread() const noexcept;

 private:
  void submit(std::unique_ptr<detail::Operation> operation);
  void when_connected(detail::UniqueFunction<void(std::error_code, std::string)> callback);
  // errc::called_from_io_thread where a blocking call would wait for itself.
  std::error_code check_not_io_thread() const noexcept;
  // The connection's strand, by reference: the default executor for handlers that have none.
  // (get_executor() would cost an allocation per call: a strand does not fit in an
  // any_io_executor's small-object buffer.)
  const detail::ConnectionStrand& strand() const noexcept;
  std::pair<std::error_code, std::string> wait_connected();
  void release() noexcept;

  // The handler's associated executor (the connection's strand if it has none), tracked until
  // the handler runs.
  template <class Handler>
  auto completion_executor(const Handler& handler) const {
    using Executor = asio::associated_executor_t<Handler, detail::ConnectionStrand>;
    return detail::CompletionExecutor<Executor>(asio::get_associated_executor(handler, strand()));
  }

  // A handler's cancellation slot, when connected, cancels its call: the slot's handler names the
  // operation by an id and asks the transport, on its strand, to end it.
  template <class Slot>
  void cancel_through(Slot& slot, detail::Operation& operation) {
    if (!slot.is_connected())
      return;
    operation.id = detail::new_operation_id();
    slot.template emplace<detail::CancelOperation>(core_, operation.id);
  }

  // An async call, with the diagnostics to fill on failure (or none). The diagnostics is written
  // on the connection's strand before the handler is handed to its executor.
  template <Query Q, class Token>
  auto initiate_process(Q&& query, Diagnostics* diagnostics, Token&& token) {
    using T = typename Q::result_type;
    return asio::async_initiate<Token, void(std::error_code, T)>(
        // The query is moved straight into the operation (it takes an rvalue where the token
        // hands one over, as they all do).
        [this, diagnostics](auto handler, auto&& query) {
          if (diagnostics != nullptr)
            diagnostics->clear();
          const Clock::time_point sent = detail::connection_now(*core_);
          auto slot = asio::get_associated_cancellation_slot(handler);
          auto work = completion_executor(handler);
          auto on_outcome = [work = std::move(work), handler = std::move(handler),
                             diagnostics](Result<T> result) mutable {
            const std::error_code ec = result.error();
            if (diagnostics != nullptr && !result)
              diagnostics->set_message(result.detail());
            work.complete(std::move(handler), ec, result ? std::move(*result) : T{});
          };
          auto operation = std::make_unique<detail::QueryOperation<Q, decltype(on_outcome)>>(
              std::forward<decltype(query)>(query), sent, std::move(on_outcome));
          cancel_through(slot, *operation);
          submit(std::move(operation));
        },
        token, std::move(query));
  }

  template <Query Q, class Token>
  auto initiate_batch(std::span<const Q> batch, Diagnostics* diagnostics, Token&& token) {
    using Results = std::vector<Result<typename Q::result_type>>;
    return asio::async_initiate<Token, void(std::error_code, Results)>(
        [this, diagnostics](auto handler, std::vector<Q> queries) {
          if (diagnostics != nullptr)
            diagnostics->clear();
          const Clock::time_point sent = detail::connection_now(*core_);
          auto slot = asio::get_associated_cancellation_slot(handler);
          auto work = completion_executor(handler);
          auto on_outcome = [work = std::move(work), handler = std::move(handler), diagnostics](
                                std::error_code ec, std::string detail, Results results) mutable {
            if (diagnostics != nullptr && ec)
              diagnostics->set_message(std::move(detail));
            work.complete(std::move(handler), ec, std::move(results));
          };
          auto operation = std::make_unique<detail::BatchOperation<Q, decltype(on_outcome)>>(
              std::move(queries), sent, std::move(on_outcome));
          cancel_through(slot, *operation);
          submit(std::move(operation));
        },
        token, std::vector<Q>(batch.begin(), batch.end()));
  }

  template <Query Q>
  typename Q::result_type process_one(const Q& query, std::error_code& ec, std::string& detail) {
    using T = typename Q::result_type;
    if ((ec = check_not_io_thread())) {
      detail = "process() was called on the client's I/O thread";
      return {};
    }
    const Clock::time_point sent = Clock::now();
    std::promise<Result<T>> promise;
    std::future<Result<T>> future = promise.get_future();
    auto on_outcome = [&promise](Result<T> result) { promise.set_value(std::move(result)); };
    submit(
        std::make_unique<detail::QueryOperation<Q, decltype(on_outcome)>>(query, sent, on_outcome));
    Result<T> result = future.get();
    ec = result.error();
    if (!result) {
      detail = result.detail();
      return {};
    }
    return std::move(*result);
  }

  template <Query Q>
  std::vector<Result<typename Q::result_type>> process_batch(std::span<const Q> batch,
                                                             std::error_code& ec,
                                                             std::string& detail) {
    using Results = std::vector<Result<typename Q::result_type>>;
    if (batch.empty())
      return {};
    if ((ec = check_not_io_thread())) {
      detail = "process() was called on the client's I/O thread";
      return {};
    }
    const Clock::time_point sent = Clock::now();
    struct Outcome {
      std::error_code error;
      std::string detail;
      Results results;
    };
    std::promise<Outcome> promise;
    std::future<Outcome> future = promise.get_future();
    auto on_outcome = [&promise](std::error_code error, std::string why, Results results) {
      promise.set_value({error, std::move(why), std::move(results)});
    };
    submit(std::make_unique<detail::BatchOperation<Q, decltype(on_outcome)>>(
        std::vector<Q>(batch.begin(), batch.end()), sent, on_outcome));
    Outcome outcome = future.get();
    ec = outcome.error;
    detail = std::move(outcome.detail);
    return std::move(outcome.results);
  }

  friend std::shared_ptr<detail::Transport> detail::transport_of(const Client& client) noexcept;

  struct OwnedThread;
  std::unique_ptr<OwnedThread> owned_;  // declared first: outlives core_
  std::shared_ptr<detail::Transport> core_;
};

}  // namespace leasehold
