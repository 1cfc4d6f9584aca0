// What a Client hands its connection: a call as one Operation (its requests, the replies they
// get, and what to do with them), and where it completes. Internal: the public API is client.hpp.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/io_context.hpp>
#include <asio/prefer.hpp>
#include <asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "leasehold/clock.hpp"
#include "leasehold/error.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold {
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
  // A call bound to its connection, still waiting to be written, may take a later one in (both
  // then answered by its requests): true if it did, and `later` is left with nothing to do.
  virtual bool absorb(Operation& later) {
    (void)later;
    return false;
  }

  Clock::time_point sent;  // when the call was made: lease deadlines and the timeout count from it
  // Set by a caller that may cancel the call (0: it cannot): what Transport::cancel() names.
  std::uint64_t id = 0;
  // Its bytes were handed out for writing at least once: it may have run, even if it is waiting
  // to be sent again.
  bool handed_out = false;
  // Its caller got its outcome (it timed out or was cancelled) while it was in flight: replies
  // that come for it are matched and dropped.
  bool answered = false;
  // The connection's bookkeeping.
  Clock::time_point deadline;
  std::size_t replies_received = 0;
  // Requests answered NOSCRIPT (or, from Redis 6, a syntax error for SET with NX and GET), sent
  // again as EVAL.
  std::vector<std::size_t> noscript_replies;
  // A NOSCRIPT call waiting to be sent again as EVAL, after which a call to one of its hash slots
  // ran: sent now, it would run after a call its caller made later. It fails instead.
  bool overtaken = false;
  // It means something only on the connection it was queued on (WAIT counts the replicas that
  // have the writes sent before it there): a lost connection fails it, sent or not, rather than
  // send it on the next, which may reach another server.
  bool bound_to_connection = false;

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
// outstanding work until its handler is handed over (as Asio's own operations do), and runs the
// handler as asio::dispatch would. Once only: a call answered early (timed out, cancelled) stays
// with its connection until its reply comes, and must not keep the caller's io_context running.
template <class Executor>
class CompletionExecutor {
 public:
  explicit CompletionExecutor(const Executor& executor)
      : tracked_(asio::prefer(executor, asio::execution::outstanding_work.tracked)) {}

  template <class Handler, class... Args>
  void complete(Handler handler, Args&&... args) {
    const auto tracked = std::move(tracked_);  // no longer outstanding once handed over
    dispatch_to(tracked, std::move(handler), std::forward<Args>(args)...);
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
  void complete(Handler handler, Args&&... args) {
    const auto tracked = std::move(tracked_);  // no longer outstanding once handed over
    if (const TrackedIo* io = std::get_if<TrackedIo>(&tracked)) {
      if (io->running_in_this_thread()) {
        std::move(handler)(std::forward<Args>(args)...);
        return;
      }
      dispatch_to(*io, std::move(handler), std::forward<Args>(args)...);
      return;
    }
    dispatch_to(std::get<asio::any_io_executor>(tracked), std::move(handler),
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

// A fresh Operation::id (never 0), from any thread.
std::uint64_t new_operation_id() noexcept;

// What an async call's cancellation slot holds: at an emission, it asks the transport (if it is
// still there) to cancel the operation named `id` on its strand, as far as the cancellation type
// allows: terminal also ends a call that was sent (its outcome unknown, its acquire released);
// partial and total only one that was not. A call that completed meanwhile is left alone.
struct CancelOperation {
  CancelOperation(const std::shared_ptr<Transport>& transport, std::uint64_t id)
      : transport(transport), id(id) {}
  void operator()(asio::cancellation_type type) const;

  std::weak_ptr<Transport> transport;
  std::uint64_t id;
};

// Sends a request whose outcome nobody waits for.
void send_without_waiting(Transport& core, Request request);

// The current time for a call's Timing, as the connection tells it: on its strand, while it hands
// out the replies of one read, the time that read completed (never later than the truth: a
// call's `sent` is then a little early, which only shortens its lease; a reply's `received` is
// when it was read), so that calls made by callers that replies resume cost no clock read of
// their own. Clock::now() anywhere else.
Clock::time_point connection_now(const Transport& core) noexcept;

// Sends, without waiting, what a query asks for when its outcome is unknown: it failed with `ec`
// after the call was handed out for writing (`handed_out`) or not.
template <Query Q>
void clean_up_unknown_outcome(Transport& core, const Q& query, std::error_code ec,
                              bool handed_out) {
  if constexpr (HasUnknownOutcomeCleanup<Q>) {
    // An acquire that replicas did not acknowledge is released like an unknown one, and so is
    // one cancelled after it was sent.
    const bool cancelled_after_sending = handed_out && ec == asio::error::operation_aborted;
    if (!outcome_unknown(ec) && ec != errc::not_replicated && !cancelled_after_sending)
      return;
    if (std::optional<Request> cleanup = query.on_unknown_outcome())
      send_without_waiting(core, std::move(*cleanup));
  }
}

// The observer of the client that `core` serves, or null.
Observer* observer_of(const Transport& core) noexcept;

// What a query does once its outcome is known: the clean-up of an unknown outcome, and its
// report to the client's observer (Query::report).
template <Query Q>
void settle(Transport& core, const Q& query, const Result<typename Q::result_type>& outcome,
            const Timing& timing, bool handed_out) {
  if (!outcome)
    clean_up_unknown_outcome(core, query, outcome.error(), handed_out);
  if constexpr (ReportsOutcome<Q>) {
    if (Observer* observer = observer_of(core))
      query.report(*observer, outcome, timing);
  }
}

// Sends, without waiting, what a query asks for after `reply` (Query::leftover), before it is
// parsed.
template <Query Q>
void clean_up_leftover(Transport& core, const Q& query, const Reply& reply) {
  if constexpr (HasLeftoverCleanup<Q>) {
    if (std::optional<Request> cleanup = query.leftover(reply))
      send_without_waiting(core, std::move(*cleanup));
  }
}

// The outcome of one query, from the connection's verdict and its reply. The operation runs its
// own query once: it parses the reply as an rvalue (a query may then move what it has into the
// outcome, and must leave what its clean-up and its report need when there is no value).
template <Query Q>
Result<typename Q::result_type> outcome_of(Transport& core, Q& query, std::error_code error,
                                           std::string&& detail, Reply& reply,
                                           const Operation& operation) {
  const Timing timing{operation.sent, connection_now(core)};
  if (!error)
    clean_up_leftover(core, query, reply);
  Result<typename Q::result_type> result =
      error ? Result<typename Q::result_type>(error, std::move(detail))
            : std::move(query).parse(std::move(reply), timing);
  settle(core, query, result, timing, operation.handed_out);
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
    on_outcome_(outcome_of(core, query_, error, std::move(detail), reply_, *this));
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
    const Timing timing{sent, connection_now(core)};
    if (error) {
      const Result<typename Q::result_type> failed(error, detail);
      for (const Q& query : queries_)
        settle(core, query, failed, timing, handed_out);
    } else {
      results.reserve(queries_.size());
      for (std::size_t i = 0; i < queries_.size(); ++i) {
        clean_up_leftover(core, queries_[i], replies_[i]);
        // Run once, as in outcome_of(): the query may move what it has into its outcome.
        results.push_back(std::move(queries_[i]).parse(std::move(replies_[i]), timing));
        settle(core, queries_[i], results.back(), timing, handed_out);
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

}  // namespace leasehold
