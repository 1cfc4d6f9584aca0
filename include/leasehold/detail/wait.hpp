// The one waiter behind every kind's wait in turn, and its sync and async forms (wait.hpp).
#pragma once

#include <asio/associated_cancellation_slot.hpp>
#include <asio/async_result.hpp>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <utility>

#include "leasehold/client.hpp"
#include "leasehold/clock.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/detail/operation.hpp"
#include "leasehold/detail/turn.hpp"
#include "leasehold/detail/unique_function.hpp"
#include "leasehold/error.hpp"
#include "leasehold/turn.hpp"

namespace leasehold::detail {

// One wait: what it waits for (a kind's turn contract), until when, how, and the label of the
// lease's holder (empty: the process's).
struct TurnWait {
  std::shared_ptr<const TurnContract> turn;
  Clock::time_point deadline;
  WaitOptions options;
  std::string holder_label{};
  // The lease's id and holder suffix (holder.hpp) when the wait is one step of a lease on several
  // names, whose keys all hold one value; by default a fresh id and this process's holder.
  std::optional<LeaseId> id{};
  std::optional<std::string> holder{};
};

// A wait in progress. cancel() (from any thread) ends it with operation_aborted, at once; the
// wait then leaves the queue, and gives back a lease granted to a try that was in flight.
class TurnWaitHandle {
 public:
  virtual ~TurnWaitHandle() = default;
  virtual void start() = 0;
  virtual void cancel() = 0;
};

// Throws Error (errc::invalid_argument) for options that cannot work.
void validate(const WaitOptions& options);

// Starts a wait on `client`'s strand. `done` is called once, on that strand: with the granted
// lease, with none (the deadline passed), or with an error (the try failed; operation_aborted:
// cancelled).
using TurnWaitDone =
    UniqueFunction<void(std::error_code, std::string detail, std::shared_ptr<LeaseState>)>;
// make_turn_wait() makes it and start() starts it; a wait cancelled before it started ends as
// soon as it starts.
std::shared_ptr<TurnWaitHandle> make_turn_wait(Client& client, TurnWait wait, TurnWaitDone done);

void check_not_io_thread(const Client& client, const char* what);

// Waits on the calling thread (not the client's I/O thread) for the wait that make(done) makes
// (make_turn_wait's, a lock set's): the Token, or none when the deadline passed or either stop
// token was requested. Throws the failure that ended the wait.
template <class Token, class Make>
std::optional<Token> wait_with(Make&& make, std::stop_token stop, std::stop_token also_stop = {}) {
  struct Outcome {
    std::error_code error;
    std::string detail;
    std::shared_ptr<LeaseState> state;
  };
  std::promise<Outcome> promise;
  std::future<Outcome> future = promise.get_future();
  const std::shared_ptr<TurnWaitHandle> started = std::forward<Make>(make)(TurnWaitDone(
      [&promise](std::error_code ec, std::string why, std::shared_ptr<LeaseState> state) {
        promise.set_value({ec, std::move(why), std::move(state)});
      }));
  started->start();
  const std::stop_callback on_stop(stop, [&started] { started->cancel(); });
  const std::stop_callback on_also_stop(also_stop, [&started] { started->cancel(); });
  Outcome outcome = future.get();
  if (outcome.error == asio::error::operation_aborted)
    return std::nullopt;  // stopped
  throw_if(outcome.error, outcome.detail);
  if (!outcome.state)
    return std::nullopt;
  return TokenAccess::make<Token>(std::move(outcome.state));
}

// wait_with() for a wait in turn for one lease.
template <class Token>
std::optional<Token> wait_in_turn(Client& client, TurnWait wait, std::stop_token stop,
                                  std::stop_token also_stop = {}) {
  return wait_with<Token>(
      [&client, &wait](TurnWaitDone done) {
        return make_turn_wait(client, std::move(wait), std::move(done));
      },
      std::move(stop), std::move(also_stop));
}

// The async form of wait_with(); completion signature void(std::error_code, std::optional<Token>).
// Cancelling it (its handler's cancellation slot, any type) or requesting `also_stop` ends it
// with operation_aborted. `make` is kept until the wait starts.
template <class Token, class Make, class CompletionToken>
auto async_wait_with(Client& client, Make make, std::stop_token also_stop,
                     CompletionToken&& token) {
  using Result = std::optional<Token>;
  return asio::async_initiate<CompletionToken, void(std::error_code, Result)>(
      [&client](auto handler, Make make, std::stop_token also_stop) {
        auto slot = asio::get_associated_cancellation_slot(handler);
        using Executor = asio::associated_executor_t<decltype(handler), asio::any_io_executor>;
        CompletionExecutor<Executor> work(
            asio::get_associated_executor(handler, client.get_executor()));
        // Registered before the wait starts, dropped when it ends.
        auto on_stop = std::make_shared<std::optional<std::stop_callback<std::function<void()>>>>();
        auto started = std::move(make)(TurnWaitDone(
            [work = std::move(work), handler = std::move(handler), on_stop](
                std::error_code ec, std::string, std::shared_ptr<LeaseState> state) mutable {
              on_stop->reset();
              Result result;
              if (state)
                result.emplace(TokenAccess::make<Token>(std::move(state)));
              work.complete(std::move(handler), ec, std::move(result));
            }));
        const std::weak_ptr<TurnWaitHandle> weak(started);
        const auto cancel = [weak] {
          if (const auto alive = weak.lock())
            alive->cancel();
        };
        on_stop->emplace(also_stop, cancel);
        if (slot.is_connected())
          slot.assign([cancel](asio::cancellation_type) { cancel(); });
        started->start();
      },
      token, std::move(make), std::move(also_stop));
}

// async_wait_with() for a wait in turn for one lease.
template <class Token, class CompletionToken>
auto async_wait_in_turn(Client& client, TurnWait wait, std::stop_token also_stop,
                        CompletionToken&& token) {
  return async_wait_with<Token>(
      client,
      [&client, wait = std::move(wait)](TurnWaitDone done) mutable {
        return make_turn_wait(client, std::move(wait), std::move(done));
      },
      std::move(also_stop), std::forward<CompletionToken>(token));
}

// wait_until() as `what` (its name in the error for a call on the client's I/O thread).
template <class Token>
std::optional<Token> wait_until_as(const char* what, Client& client, const InTurn<Token>& turn,
                                   Clock::time_point deadline, const WaitOptions& options,
                                   std::stop_token stop) {
  validate(options);
  check_not_io_thread(client, what);
  return wait_in_turn<Token>(client, TurnWait{TurnAccess::contract(turn), deadline, options},
                             std::move(stop));
}

}  // namespace leasehold::detail
