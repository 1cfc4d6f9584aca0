// A connection to one Redis server that runs queries, sync or async.
//
//   leasehold::Client redis("redis://127.0.0.1:6380");          // its own I/O thread
//   redis.connect();                                            // optional: fail fast
//   leasehold::Reply r = redis.process(leasehold::Command{"PING"});
//
//   leasehold::Client redis(io.get_executor(), url);             // on your io_context
//   auto r = co_await redis.async_process(query, asio::use_awaitable);
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
#include <asio/dispatch.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/prefer.hpp>
#include <asio/strand.hpp>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/detail/unique_function.hpp"
#include "leasehold/error.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"
#include "leasehold/url.hpp"

namespace leasehold {

struct ClientOptions {
  // One attempt to connect, including AUTH/SELECT, must finish within this.
  std::chrono::milliseconds connect_timeout{2000};
  // A call that has no reply this long after it was made fails with errc::command_timeout.
  std::chrono::milliseconds command_timeout{2000};
  // Reconnect backoff: doubles from min to max, with jitter.
  std::chrono::milliseconds reconnect_delay_min{25};
  std::chrono::milliseconds reconnect_delay_max{2000};
  // CLIENT SETNAME after connecting (visible in CLIENT LIST); empty: none.
  std::string client_name = "leasehold";
  // Redis Cluster (redis-cluster:// URLs): how often the slot map is read again, besides after a
  // MOVED reply, a CLUSTERDOWN or a lost connection.
  std::chrono::milliseconds cluster_refresh_interval{5000};
  // Replica acknowledgement (off: 0). After each acquire or extend, the client sends
  // WAIT replica_acks replica_ack_timeout on the same connection; fewer acknowledgements make the
  // call fail with errc::not_replicated (and an acquire is released). Replication stays
  // asynchronous: this narrows, not closes, the window in which a failover loses a lease.
  int replica_acks = 0;
  std::chrono::milliseconds replica_ack_timeout{100};
};

namespace detail {

// What the transport hands back for one operation: an error for the whole operation, or one
// reply per request.
using OperationCompletion = UniqueFunction<void(std::error_code, std::string, std::vector<Reply>)>;

class Transport;

}  // namespace detail

class Client {
 public:
  // A client with its own I/O thread.
  explicit Client(std::string_view url, ClientOptions options = {});
  explicit Client(RedisUrl url, ClientOptions options = {});
  // A client on the caller's executor, which the caller runs (async use; the sync calls work from
  // other threads while it runs).
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
          auto work = tracked_executor(handler);
          when_connected(
              [handler = std::move(handler), work](std::error_code ec, std::string) mutable {
                asio::dispatch(
                    work, [handler = std::move(handler), ec]() mutable { std::move(handler)(ec); });
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
  auto async_process(const Q& query, Token&& token) {
    using T = typename Q::result_type;
    return asio::async_initiate<Token, void(std::error_code, T)>(
        [this](auto handler, Q query) {
          auto work = tracked_executor(handler);
          const Clock::time_point sent = Clock::now();
          std::vector<Request> requests;
          requests.push_back(query.request());
          submit(std::move(requests),
                 [core = core_, handler = std::move(handler), work, query = std::move(query), sent](
                     std::error_code ec, std::string detail, std::vector<Reply> replies) mutable {
                   Result<T> result =
                       complete_one(core, query, ec, std::move(detail), replies, sent);
                   T value{};
                   if (result)
                     value = std::move(*result);
                   asio::dispatch(work, [handler = std::move(handler), ec = result.error(),
                                         value = std::move(value)]() mutable {
                     std::move(handler)(ec, std::move(value));
                   });
                 });
        },
        token, query);
  }

  // Completion signature: void(std::error_code, std::vector<Result<Q::result_type>>).
  template <Query Q, class Token>
  auto async_process(std::span<const Q> batch, Token&& token) {
    using Results = std::vector<Result<typename Q::result_type>>;
    return asio::async_initiate<Token, void(std::error_code, Results)>(
        [this](auto handler, std::vector<Q> queries) {
          auto work = tracked_executor(handler);
          const Clock::time_point sent = Clock::now();
          std::vector<Request> requests = requests_of<Q>(queries);
          submit(
              std::move(requests),
              [core = core_, handler = std::move(handler), work, queries = std::move(queries),
               sent](std::error_code ec, std::string detail, std::vector<Reply> replies) mutable {
                Results results = complete_all<Q>(core, queries, ec, detail, replies, sent);
                asio::dispatch(work, [handler = std::move(handler), ec,
                                      results = std::move(results)]() mutable {
                  std::move(handler)(ec, std::move(results));
                });
              });
        },
        token, std::vector<Q>(batch.begin(), batch.end()));
  }

  // Fails every call in progress and every later one with errc::closed. Idempotent, never throws.
  void close() noexcept;

  // True on a thread where a blocking call would wait for itself (the thread that runs this
  // client's executor): use the async_ forms there.
  bool running_in_io_thread() const noexcept;

 private:
  using CorePtr = std::shared_ptr<detail::Transport>;

  struct SyncOutcome {
    std::error_code error;
    std::string detail;
    std::vector<Reply> replies;
  };

  void submit(std::vector<Request> requests, detail::OperationCompletion completion) {
    submit_to(core_, std::move(requests), std::move(completion));
  }
  static void submit_to(const CorePtr& core, std::vector<Request> requests,
                        detail::OperationCompletion completion);
  void when_connected(detail::UniqueFunction<void(std::error_code, std::string)> callback);
  SyncOutcome run_sync(std::vector<Request> requests);
  // The connection's strand, by reference: the default executor for handlers that have none.
  // (get_executor() would cost an allocation per call: a strand does not fit in an
  // any_io_executor's small-object buffer.)
  const asio::strand<asio::any_io_executor>& strand() const noexcept;
  std::pair<std::error_code, std::string> wait_connected();
  void release() noexcept;

  template <class Handler>
  auto tracked_executor(const Handler& handler) const {
    return asio::prefer(asio::get_associated_executor(handler, strand()),
                        asio::execution::outstanding_work.tracked);
  }

  // Sends, without waiting, what a query asks for when its outcome is unknown.
  template <Query Q>
  static void clean_up_unknown_outcome(const CorePtr& core, const Q& query, std::error_code ec) {
    if constexpr (HasUnknownOutcomeCleanup<Q>) {
      // An acquire that replicas did not acknowledge is released like an unknown one.
      if (!outcome_unknown(ec) && ec != errc::not_replicated)
        return;
      if (std::optional<Request> cleanup = query.on_unknown_outcome()) {
        std::vector<Request> requests;
        requests.push_back(std::move(*cleanup));
        submit_to(core, std::move(requests),
                  [](std::error_code, std::string, std::vector<Reply>) {});
      }
    }
  }

  // The outcome of one query from the transport's completion.
  template <Query Q>
  static Result<typename Q::result_type> complete_one(const CorePtr& core, const Q& query,
                                                      std::error_code ec, std::string detail,
                                                      std::vector<Reply>& replies,
                                                      Clock::time_point sent) {
    if (ec) {
      clean_up_unknown_outcome(core, query, ec);
      return Result<typename Q::result_type>(ec, std::move(detail));
    }
    Result<typename Q::result_type> result =
        query.parse(std::move(replies.front()), Timing{sent, Clock::now()});
    if (!result)
      clean_up_unknown_outcome(core, query, result.error());
    return result;
  }

  template <Query Q>
  static std::vector<Result<typename Q::result_type>> complete_all(
      const CorePtr& core, std::span<const Q> batch, std::error_code ec, const std::string& detail,
      std::vector<Reply>& replies, Clock::time_point sent) {
    (void)detail;
    std::vector<Result<typename Q::result_type>> results;
    if (ec) {
      for (const Q& query : batch)
        clean_up_unknown_outcome(core, query, ec);
      return results;
    }
    results.reserve(batch.size());
    const Timing timing{sent, Clock::now()};
    for (std::size_t i = 0; i < batch.size(); ++i) {
      results.push_back(batch[i].parse(std::move(replies[i]), timing));
      if (!results.back())
        clean_up_unknown_outcome(core, batch[i], results.back().error());
    }
    return results;
  }

  template <Query Q>
  typename Q::result_type process_one(const Q& query, std::error_code& ec, std::string& detail) {
    const Clock::time_point sent = Clock::now();
    std::vector<Request> requests;
    requests.push_back(query.request());
    SyncOutcome outcome = run_sync(std::move(requests));
    Result<typename Q::result_type> result =
        complete_one(core_, query, outcome.error, std::move(outcome.detail), outcome.replies, sent);
    ec = result.error();
    if (!result) {
      detail = result.detail();
      return {};
    }
    return std::move(*result);
  }

  template <Query Q>
  static std::vector<Request> requests_of(std::span<const Q> batch) {
    std::vector<Request> requests;
    requests.reserve(batch.size());
    for (const Q& query : batch)
      requests.push_back(query.request());
    return requests;
  }

  template <Query Q>
  std::vector<Result<typename Q::result_type>> process_batch(std::span<const Q> batch,
                                                             std::error_code& ec,
                                                             std::string& detail) {
    if (batch.empty())
      return {};
    const Clock::time_point sent = Clock::now();
    SyncOutcome outcome = run_sync(requests_of(batch));
    ec = outcome.error;
    detail = outcome.detail;
    return complete_all(core_, batch, outcome.error, outcome.detail, outcome.replies, sent);
  }

  struct OwnedThread;
  std::unique_ptr<OwnedThread> owned_;  // declared first: outlives core_
  std::shared_ptr<detail::Transport> core_;
};

}  // namespace leasehold
