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
#include <asio/io_context.hpp>
#include <asio/prefer.hpp>
#include <asio/strand.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "leasehold/detail/unique_function.hpp"
#include "leasehold/error.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"
#include "leasehold/url.hpp"

namespace leasehold {

// TLS for rediss:// and rediss-cluster:// URLs. The server's certificate is always verified:
// against `ca_file` (PEM) when given, else against the system's trusted certificates; and its
// name against `server_name`, or the URL's host when that is empty (an IP address is checked
// against the certificate's IP entries). A server run with tls-auth-clients (Redis' default)
// also wants a client certificate and its key.
struct TlsOptions {
  std::string ca_file;      // PEM file of the CAs that may sign the server's certificate
  std::string cert_file;    // PEM client certificate (chain), for servers that ask for one
  std::string key_file;     // PEM private key of cert_file
  std::string server_name;  // the name to expect in the server's certificate, and to send (SNI)
};

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
  // Certificates for rediss:// URLs; setting any with another URL is an error.
  TlsOptions tls;
  // After its first connection the client reads the server's maxmemory-policy (INFO memory) and
  // logs a warning unless it is noeviction: any other policy may evict lock keys.
  bool warn_on_eviction_policy = true;
};

namespace detail {

class Transport;

// The strand a connection's state lives on: typed on its io_context's executor, so that Asio
// hands each completion to it without a type-erased copy of its executor.
using ConnectionStrand = asio::strand<asio::io_context::executor_type>;

// One call handed to the connection: its requests, the replies they get and what to do with
// them, all in one allocation. The connection owns it from submit() until it calls complete(),
// and calls on_reply() and complete() on its strand only.
class Operation {
 public:
  Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;
  virtual ~Operation() = default;

  std::span<const Request> requests() const noexcept { return requests_; }
  // True if every request may be sent again after the connection was lost with it in flight.
  bool retry_safe() const noexcept;

  // The reply to requests()[index] (each index once, unless the operation is sent again).
  virtual void on_reply(std::size_t index, Reply&& reply) = 0;
  // The end, called once: with every reply given (no error), or the error of the whole call.
  // `core` takes what the completion sends without waiting (the clean-up of an unknown outcome).
  virtual void complete(Transport& core, std::error_code error, std::string detail) = 0;

  Clock::time_point sent;  // when the call was made: lease deadlines and the timeout count from it
  // The connection's bookkeeping.
  Clock::time_point deadline;
  std::size_t replies_received = 0;
  std::vector<std::size_t> noscript_replies;  // requests answered NOSCRIPT, sent again as EVAL

 protected:
  // The derived operation's requests, which it stores.
  void set_requests(std::span<const Request> requests) noexcept { requests_ = requests; }

 private:
  std::span<const Request> requests_;
};

// Calls handler(args...) through `executor` as asio::dispatch does.
template <class Executor, class Handler, class... Args>
void dispatch_to(const Executor& executor, Handler handler, Args&&... args) {
  asio::dispatch(executor,
                 [handler = std::move(handler), ... args = std::forward<Args>(args)]() mutable {
                   std::move(handler)(std::move(args)...);
                 });
}

// Where a call completes: its handler's associated executor, which counts the call as
// outstanding work until then (as Asio's own operations do), and runs the handler as
// asio::dispatch would.
template <class Executor>
class CompletionExecutor {
 public:
  explicit CompletionExecutor(const Executor& executor)
      : tracked_(asio::prefer(executor, asio::execution::outstanding_work.tracked)) {}

  template <class Handler, class... Args>
  void complete(Handler handler, Args&&... args) const {
    dispatch_to(tracked_, std::move(handler), std::forward<Args>(args)...);
  }

 private:
  std::decay_t<decltype(asio::prefer(std::declval<const Executor&>(),
                                     asio::execution::outstanding_work.tracked))>
      tracked_;
};

// The executor that `executor` holds if it is a T, else null. (Asio 1.22's
// any_io_executor::target<T>() casts to T without checking that the executor is one.)
template <class T>
const T* executor_target(const asio::any_io_executor& executor) noexcept {
  return executor.target_type() == typeid(T) ? executor.target<T>() : nullptr;
}

// The usual handler is a coroutine's on an io_context: an any_io_executor that holds the
// io_context's executor. That executor is kept as itself, tracked (no type-erased copies of
// it), and a handler whose io_context runs in this thread is called at once, as dispatch would.
template <>
class CompletionExecutor<asio::any_io_executor> {
  using Io = asio::io_context::executor_type;
  using TrackedIo = std::decay_t<decltype(asio::prefer(std::declval<const Io&>(),
                                                       asio::execution::outstanding_work.tracked))>;

 public:
  explicit CompletionExecutor(const asio::any_io_executor& executor) : tracked_(track(executor)) {}

  template <class Handler, class... Args>
  void complete(Handler handler, Args&&... args) const {
    if (const TrackedIo* io = std::get_if<TrackedIo>(&tracked_)) {
      if (io->running_in_this_thread()) {
        std::move(handler)(std::forward<Args>(args)...);
        return;
      }
      dispatch_to(*io, std::move(handler), std::forward<Args>(args)...);
      return;
    }
    dispatch_to(std::get<asio::any_io_executor>(tracked_), std::move(handler),
                std::forward<Args>(args)...);
  }

 private:
  static std::variant<TrackedIo, asio::any_io_executor> track(
      const asio::any_io_executor& executor) {
    using Tracked = std::variant<TrackedIo, asio::any_io_executor>;
    if (const Io* io = executor_target<Io>(executor))
      return Tracked(std::in_place_index<0>,
                     asio::prefer(*io, asio::execution::outstanding_work.tracked));
    if (const TrackedIo* io = executor_target<TrackedIo>(executor))
      return Tracked(std::in_place_index<0>, *io);
    return Tracked(std::in_place_index<1>,
                   asio::prefer(executor, asio::execution::outstanding_work.tracked));
  }

  std::variant<TrackedIo, asio::any_io_executor> tracked_;
};

// Sends a request whose outcome nobody waits for.
void send_without_waiting(Transport& core, Request request);

// The current time for a call's Timing, as the connection tells it: on its strand, while it hands
// out the replies of one read, the time that read completed (never later than the truth: a
// call's `sent` is then a little early, which only shortens its lease; a reply's `received` is
// when it was read), so that calls made by callers that replies resume cost no clock read of
// their own. Clock::now() anywhere else.
Clock::time_point connection_now(const Transport& core) noexcept;

// Sends, without waiting, what a query asks for when its outcome is unknown.
template <Query Q>
void clean_up_unknown_outcome(Transport& core, const Q& query, std::error_code ec) {
  if constexpr (HasUnknownOutcomeCleanup<Q>) {
    // An acquire that replicas did not acknowledge is released like an unknown one.
    if (!outcome_unknown(ec) && ec != errc::not_replicated)
      return;
    if (std::optional<Request> cleanup = query.on_unknown_outcome())
      send_without_waiting(core, std::move(*cleanup));
  }
}

// The outcome of one query, from the connection's verdict and its reply. The operation runs its
// own query once: it parses the reply as an rvalue (a query may then move what it has into the
// outcome, and must leave what its clean-up needs when there is no value).
template <Query Q>
Result<typename Q::result_type> outcome_of(Transport& core, Q& query, std::error_code error,
                                           std::string&& detail, Reply& reply,
                                           Clock::time_point sent) {
  Result<typename Q::result_type> result =
      error ? Result<typename Q::result_type>(error, std::move(detail))
            : std::move(query).parse(std::move(reply), Timing{sent, connection_now(core)});
  if (!result)
    clean_up_unknown_outcome(core, query, result.error());
  return result;
}

// One query as an operation: `on_outcome(Result<Q::result_type>)` gets its outcome.
template <Query Q, class OnOutcome>
class QueryOperation final : public Operation {
 public:
  // From a query to copy or (async calls) to move.
  template <class QueryArg, class OutcomeArg>
  QueryOperation(QueryArg&& query, Clock::time_point sent_at, OutcomeArg&& on_outcome)
      : query_(std::forward<QueryArg>(query)), on_outcome_(std::forward<OutcomeArg>(on_outcome)) {
    sent = sent_at;
    if constexpr (kQueryKeepsRequest) {
      set_requests({&query_.request(), 1});
    } else {
      request_ = query_.request();
      set_requests({&request_, 1});
    }
  }

  void on_reply(std::size_t, Reply&& reply) override { reply_ = std::move(reply); }
  void complete(Transport& core, std::error_code error, std::string detail) override {
    on_outcome_(outcome_of(core, query_, error, std::move(detail), reply_, sent));
  }

 private:
  // A query that keeps its request (request() returns a reference) is sent from there.
  static constexpr bool kQueryKeepsRequest =
      std::is_lvalue_reference_v<decltype(std::declval<const Q&>().request())>;
  struct NoRequest {};

  Q query_;
  [[no_unique_address]] std::conditional_t<kQueryKeepsRequest, NoRequest, Request> request_;
  Reply reply_;
  OnOutcome on_outcome_;
};

// A batch of queries as one operation: `on_outcome(error, detail, results)` gets an error for
// the whole batch (and no results), or one Result per query.
template <Query Q, class OnOutcome>
class BatchOperation final : public Operation {
 public:
  using Results = std::vector<Result<typename Q::result_type>>;

  BatchOperation(std::vector<Q> queries, Clock::time_point sent_at, OnOutcome on_outcome)
      : queries_(std::move(queries)),
        replies_(queries_.size()),
        on_outcome_(std::move(on_outcome)) {
    sent = sent_at;
    requests_.reserve(queries_.size());
    for (const Q& query : queries_)
      requests_.push_back(query.request());
    set_requests(requests_);
  }

  void on_reply(std::size_t index, Reply&& reply) override { replies_[index] = std::move(reply); }
  void complete(Transport& core, std::error_code error, std::string detail) override {
    Results results;
    if (error) {
      for (const Q& query : queries_)
        clean_up_unknown_outcome(core, query, error);
    } else {
      results.reserve(queries_.size());
      const Timing timing{sent, connection_now(core)};
      for (std::size_t i = 0; i < queries_.size(); ++i) {
        // Run once, as in outcome_of(): the query may move what it has into its outcome.
        results.push_back(std::move(queries_[i]).parse(std::move(replies_[i]), timing));
        if (!results.back())
          clean_up_unknown_outcome(core, queries_[i], results.back().error());
      }
    }
    on_outcome_(error, std::move(detail), std::move(results));
  }

 private:
  std::vector<Q> queries_;
  std::vector<Request> requests_;
  std::vector<Reply> replies_;
  OnOutcome on_outcome_;
};

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
    using T = typename Q::result_type;
    return asio::async_initiate<Token, void(std::error_code, T)>(
        // The query is moved straight into the operation (it takes an rvalue where the token
        // hands one over, as they all do).
        [this](auto handler, auto&& query) {
          const Clock::time_point sent = detail::connection_now(*core_);
          auto work = completion_executor(handler);
          auto on_outcome = [work = std::move(work),
                             handler = std::move(handler)](Result<T> result) mutable {
            const std::error_code ec = result.error();
            work.complete(std::move(handler), ec, result ? std::move(*result) : T{});
          };
          submit(std::make_unique<detail::QueryOperation<Q, decltype(on_outcome)>>(
              std::forward<decltype(query)>(query), sent, std::move(on_outcome)));
        },
        token, std::move(query));
  }

  // Completion signature: void(std::error_code, std::vector<Result<Q::result_type>>).
  template <Query Q, class Token>
  auto async_process(std::span<const Q> batch, Token&& token) {
    using Results = std::vector<Result<typename Q::result_type>>;
    return asio::async_initiate<Token, void(std::error_code, Results)>(
        [this](auto handler, std::vector<Q> queries) {
          const Clock::time_point sent = detail::connection_now(*core_);
          auto work = completion_executor(handler);
          auto on_outcome = [work = std::move(work), handler = std::move(handler)](
                                std::error_code ec, std::string, Results results) mutable {
            work.complete(std::move(handler), ec, std::move(results));
          };
          submit(std::make_unique<detail::BatchOperation<Q, decltype(on_outcome)>>(
              std::move(queries), sent, std::move(on_outcome)));
        },
        token, std::vector<Q>(batch.begin(), batch.end()));
  }

  // Fails every call in progress and every later one with errc::closed. Idempotent, never throws.
  void close() noexcept;

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

  struct OwnedThread;
  std::unique_ptr<OwnedThread> owned_;  // declared first: outlives core_
  std::shared_ptr<detail::Transport> core_;
};

}  // namespace leasehold
