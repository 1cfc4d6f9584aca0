// Watch<State>: observing a name: its state at once, then each change (a new holder, a release,
// an expiry, a deletion; an Election's new leader, or a new value proclaimed), as it happens.
// A kind makes the value to watch (observe() of an Election, a Lock, an RwLock, a Semaphore); a
// Watch runs it on a Client.
//
//   leasehold::Watch leaders(redis, schedulers.observe("eu"));
//   while (auto seen = leaders.next(deadline, stop))   // std::optional<Leader>: none leads
//     show(*seen);
//   auto seen = co_await leaders.async_next(asio::use_awaitable);
//
//   leasehold::Watch logged(redis, schedulers.observe("eu"),
//                           [](std::error_code error, const std::optional<leasehold::Leader>& l) {
//                             ...   // on the client's I/O thread
//                           });
//
// A watch costs Redis next to nothing while nothing changes. An election's is told of each
// change on the name's channel (sharded pub/sub, the client's one subscriber connection), the
// change itself in the message; the first two observers of a name look when its holder's lease
// would run out (a holder that crashed tells no one) and tell the others what they find;
// everyone renews its interest every `recheck`. A lock's changes cannot announce themselves
// (anyone may SET its key): Redis's tracking of the key tells the client of each write, expiry
// or delete, and the watch looks. See docs/election.md and docs/locks.md, "Observing".
#pragma once

#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "leasehold/client.hpp"
#include "leasehold/clock.hpp"
#include "leasehold/detail/operation.hpp"
#include "leasehold/detail/watch.hpp"
#include "leasehold/error.hpp"
#include "leasehold/observed.hpp"

namespace leasehold {

// How a watch paces itself.
struct WatchOptions {
  // While the watch is told of changes: the longest it goes without renewing its interest (and,
  // for the first two observers of a name, without looking), for what tells no one (a key
  // deleted behind the library's back is noticed at a look). Less than ticket_ttl.
  std::chrono::milliseconds recheck{40000};
  // While it cannot be told (a server without sharded pub/sub, a user not allowed the channel,
  // a subscriber connection down): how often it looks instead. Less than ticket_ttl.
  std::chrono::milliseconds recheck_unwatched{1000};
  // How long a name stays observed after its last observer's last renewal (an observer that
  // died), and how long a looker that died keeps its duty.
  std::chrono::milliseconds ticket_ttl{120000};
};

template <class State>
class Watch {
 public:
  using state_type = State;
  // Called with each state (the first at once), or once with the error that ended the watch.
  using Callback = std::function<void(std::error_code, const State&)>;

  // A watch whose states are taken with next() or async_next(), in order; they wait in the
  // Watch until taken.
  Watch(Client& client, const Observed<State>& observed, WatchOptions options = {})
      : mailbox_(std::make_shared<detail::WatchMailbox<State>>()) {
    start(
        client, observed,
        [mailbox = mailbox_](std::error_code error, const std::string& detail, const State* state) {
          mailbox->put(error, detail, state);
        },
        options);
  }
  // A watch that calls `on_change` on the client's I/O thread instead, from a state-of-the-name
  // change to the next (it must be quick, and must not wait on the client). No call runs or
  // starts once cancel() or the destructor returned.
  Watch(Client& client, const Observed<State>& observed, std::type_identity_t<Callback> on_change,
        WatchOptions options = {}) {
    using Gate = detail::ClosableCallback<std::error_code, const State&>;
    callback_ = std::make_shared<Gate>(std::move(on_change));
    start(
        client, observed,
        [gate = callback_](std::error_code error, const std::string&, const State* state) {
          (*gate)(error, state ? *state : State{});
        },
        options);
  }

  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  ~Watch() { cancel(); }

  // The next state not yet taken (the name's state when the watch started, then each change),
  // waiting for it until `deadline` or `stop`: none then, and once cancelled. Throws the Error
  // that ended the watch (a refused ACL, a key of the wrong type; Redis down only delays it).
  std::optional<State> next(Clock::time_point deadline = Clock::time_point::max(),
                            std::stop_token stop = {}) {
    check_taken("next");
    return mailbox_->take(deadline, std::move(stop));
  }

  // The async form; completion signature void(std::error_code, State). Cancelling it (its
  // handler's cancellation slot) ends it with operation_aborted and leaves the watch running.
  // One at a time.
  template <class CompletionToken>
  auto async_next(CompletionToken&& token) {
    check_taken("async_next");
    return asio::async_initiate<CompletionToken, void(std::error_code, State)>(
        [this](auto handler) {
          auto slot = asio::get_associated_cancellation_slot(handler);
          using Executor = asio::associated_executor_t<decltype(handler), asio::any_io_executor>;
          const Executor executor = asio::get_associated_executor(handler, executor_);
          detail::CompletionExecutor<Executor> work(executor);
          if (slot.is_connected())
            slot.assign([mailbox = std::weak_ptr(mailbox_)](asio::cancellation_type) {
              if (const auto alive = mailbox.lock())
                alive->cancel_taker();
            });
          // Completed through a post: never within this call.
          mailbox_->take_async(
              [executor = executor_, work = std::move(work), handler = std::move(handler)](
                  std::error_code error, std::optional<State> seen) mutable {
                State state = seen ? std::move(*seen) : State{};
                asio::post(executor, [work = std::move(work), handler = std::move(handler), error,
                                      state = std::move(state)]() mutable {
                  work.complete(std::move(handler), error, std::move(state));
                });
              });
        },
        token);
  }

  // Ends the watch: it stops observing; a next() waiting returns none, an async_next() ends
  // with operation_aborted, and no callback starts after this returns.
  void cancel() {
    if (handle_)
      handle_->cancel();
    if (mailbox_)
      mailbox_->close();
    if (callback_)
      callback_->close();
  }

 private:
  // A watch made with a callback has nothing to take.
  void check_taken(const char* what) const {
    if (!mailbox_)
      throw Error(make_error_code(errc::invalid_argument),
                  std::string(what) + "() on a Watch made with a callback: its states go there");
  }

  template <class Sink>
  void start(Client& client, const Observed<State>& observed, Sink sink,
             const WatchOptions& options) {
    executor_ = client.get_executor();
    handle_ = observed.start_(client, observed.target_, options, std::move(sink));
    handle_->start();
  }

  asio::any_io_executor executor_;
  std::shared_ptr<detail::WatchMailbox<State>> mailbox_;
  std::shared_ptr<detail::ClosableCallback<std::error_code, const State&>> callback_;
  std::shared_ptr<detail::WatchHandle> handle_;
};

}  // namespace leasehold
