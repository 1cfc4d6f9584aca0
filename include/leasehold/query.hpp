// Queries are values: a query says which command to send (request()) and how to read its reply
// into an outcome (parse()). A Client runs it: client.process(q) or co_await
// client.async_process(q, asio::use_awaitable). Queries never touch a socket, a thread or a clock:
// the time the request was handed to the connection enters parse() as an argument.
#pragma once

#include <chrono>
#include <concepts>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "leasehold/clock.hpp"
#include "leasehold/error.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold {

class Observer;

// The outcome of one query of a batch: a value, or the error that query alone met.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(std::error_code error, std::string detail = {})
      : error_(error), detail_(std::move(detail)) {}

  bool has_value() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }

  std::error_code error() const noexcept { return error_; }
  const std::string& detail() const noexcept { return detail_; }

  // The value; throws Error if there is none.
  T& value() & {
    throw_if_error();
    return *value_;
  }
  T&& value() && {
    throw_if_error();
    return std::move(*value_);
  }
  const T& value() const& {
    throw_if_error();
    return *value_;
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void throw_if_error() const {
    if (!value_)
      throw_if(error_ ? error_ : make_error_code(errc::unexpected_reply), detail_);
  }

  std::optional<T> value_;
  std::error_code error_;
  std::string detail_;
};

// An error reply as a failed Result: the code says what kind (see classify_error_reply), the
// detail is the server's own message.
template <class T>
Result<T> error_result(const Reply& reply) {
  return Result<T>(classify_error_reply(reply.str), reply.str);
}

// What a query does to Redis, declared by a query as `using effect = Write<L>;` (or Read<L>), so
// that a narrowed handle can refuse it at compile time (capability.hpp). L names what is touched:
// a lock type, or Command for raw commands. A query that declares nothing counts as a write.
template <class L>
struct Write {};
template <class L>
struct Read {};

// When a query's request was handed to the connection (before it was sent) and when its reply
// was read (or later): lease deadlines count from `sent`, and a reply that comes after its
// lease's deadline does not count.
struct Timing {
  Clock::time_point sent;
  Clock::time_point received;
};

// A query: request() builds the command; parse() reads the reply into an outcome. A query that
// keeps its Request may return it by const reference (Command does): the client then sends it
// from the query, without a copy. The client parses with its own copy of the query, once, as an
// rvalue: a query may add a `parse(...) &&` that moves what it holds into the outcome (TryLock
// moves its key into the token), if an outcome without a value leaves the query whole for
// on_unknown_outcome().
// Optionally, `std::optional<Request> on_unknown_outcome() const` gives a request the client sends
// (without waiting for it) when the call's outcome is unknown (it timed out or the connection was
// lost after sending): an acquire uses it to release the lease it may have taken.
// Optionally, `std::optional<Request> leftover(const Reply&) const` gives, from a reply about
// to be parsed, a request the client sends (without waiting for it): a call sent as parts
// (Request::split_by_slot) that took some of what it asked for and not the whole gives it back.
// Optionally, `void report(Observer&, const Result<result_type>&, const Timing&) const` tells the
// client's observer (observer.hpp) what the outcome means, whoever ran the query: acquires,
// releases and extensions report themselves. It is called after parse(), on the connection's
// strand, only when the client has an observer, and must not throw.
template <class Q>
concept Query = std::default_initializable<typename Q::result_type> &&
    requires(const Q& q, Reply reply, const Timing& timing) {
  { q.request() } -> std::convertible_to<Request>;
  { q.parse(std::move(reply), timing) } -> std::same_as<Result<typename Q::result_type>>;
};

template <class Q>
concept ReportsOutcome = requires(const Q& q, Observer& observer,
                                  const Result<typename Q::result_type>& outcome,
                                  const Timing& timing) {
  q.report(observer, outcome, timing);
};

template <class Q>
concept HasLeftoverCleanup = requires(const Q& q, const Reply& reply) {
  { q.leftover(reply) } -> std::same_as<std::optional<Request>>;
};

template <class Q>
concept HasUnknownOutcomeCleanup = requires(const Q& q) {
  { q.on_unknown_outcome() } -> std::same_as<std::optional<Request>>;
};

// True for the errors after which a sent call may or may not have run (condition::outcome_unknown).
inline bool outcome_unknown(std::error_code ec) noexcept {
  return ec == condition::outcome_unknown;
}

// Any command, answered with its raw reply; an error reply is an error.
// Command{"SET", "k", "v"}; Command{"GET", "k"}.retry_safe().
// It is formatted once, when made: a Command run many times sends the same bytes each time.
class Command {
 public:
  using result_type = Reply;
  using effect = Write<Command>;

  Command(std::initializer_list<std::string_view> args) : request_(Request::command(args)) {}
  explicit Command(const std::vector<std::string>& args)
      : request_(Request::command(std::span<const std::string>(args))) {}
  // A prepared request, e.g. what a query's on_unknown_outcome() asks for, to send it and wait
  // for its reply.
  explicit Command(Request request) : request_(std::move(request)) {}

  Command&& retry_safe(bool safe = true) && {
    (void)std::move(request_).retry_safe(safe);
    return std::move(*this);
  }

  const Request& request() const noexcept { return request_; }

  Result<Reply> parse(Reply reply, const Timing&) const {
    if (reply.is_error())
      return error_result<Reply>(reply);
    return reply;
  }

 private:
  Request request_;
};

}  // namespace leasehold
