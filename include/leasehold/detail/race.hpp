// The race of a piece of async work against a stop token: the work settling, or the lease it
// runs under being lost (or revoked), whichever comes first. async_while_held and async_with_lock
// both run their work through it.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/strand.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "leasehold/clock.hpp"
#include "leasehold/detail/timer.hpp"

namespace leasehold::detail {

// What an awaitable<R> yields, storable (void as a monostate).
template <class R>
using Stored = std::conditional_t<std::is_void_v<R>, std::monostate, R>;

// What becomes of the work when the stop comes first. Either way it is cancelled (terminal
// cancellation: its next cancellable co_await ends with operation_aborted).
enum class AtStop : bool {
  wait_for_work,  // the race ends when the work has settled
  leave_work,     // the race ends at once; the work runs on, detached, until it settles
};

template <class R>
struct RaceOutcome {
  bool settled = false;  // the work settled before the race ended: its value or exception is here
  Clock::time_point settled_at;
  std::exception_ptr thrown;
  std::optional<Stored<R>> value;
};

using RaceStrand = asio::strand<asio::any_io_executor>;

// The race's state lives on a strand of the caller's executor: on an io_context that several
// threads run, the work's completion, the stop and the wait would otherwise touch it at once.
template <class R>
struct RaceState;

// Wakes the race at the stop, from whatever thread requests it (the client's I/O thread, the
// thread that shuts a locker down). It holds the race weakly and goes through the caller's
// executor: the race owns a timer of that executor, so it must end there, not on the thread that
// requests the stop, maybe after the caller's io_context is gone.
template <class R>
struct WakeAtStop {
  asio::any_io_executor executor;
  std::weak_ptr<RaceState<R>> race;
  void operator()() const {
    asio::post(executor, [race = race] {
      if (auto alive = race.lock()) {
        const RaceStrand on = alive->wake.get_executor();
        asio::dispatch(on, [alive = std::move(alive)] {
          alive->stopped = true;
          alive->wake.cancel();
        });
      }
    });
  }
};

template <class R>
struct RaceState {
  explicit RaceState(const RaceStrand& strand) : wake(strand, Clock::time_point::max()) {}
  BasicTimer<RaceStrand> wake;  // cancelled at each event
  asio::cancellation_signal cancel_work;
  bool stopped = false;
  bool caller_left = false;  // the race ended before the work settled: no one reads its outcome
  RaceOutcome<R> outcome;
  std::optional<std::stop_callback<WakeAtStop<R>>> on_stop;
};

// Waits on the strand for the race to end. A stop may still arrive (on the strand) after this
// returns: the caller reads only what this returns, and the work's value or exception, which the
// work wrote once, before `settled`.
template <class R>
asio::awaitable<RaceOutcome<R>, RaceStrand> wait_for_race(std::shared_ptr<RaceState<R>> race,
                                                          AtStop at_stop) {
  constexpr asio::use_awaitable_t<RaceStrand> use;
  bool work_cancelled = false;
  bool caller_gave_up = false;
  const auto cancel_work = [&] {
    if (!work_cancelled)
      race->cancel_work.emit(asio::cancellation_type::terminal);
    work_cancelled = true;
  };
  while (!race->outcome.settled) {
    if (race->stopped) {
      cancel_work();
      if (at_stop == AtStop::leave_work)
        break;
    }
    std::error_code ignored;
    co_await race->wake.async_wait(asio::redirect_error(use, ignored));
    race->wake.expires_at(Clock::time_point::max());
    // Work that settled as the caller gave up is the outcome: its lease is released by the caller.
    if (caller_gave_up || race->outcome.settled)
      continue;
    const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
    if (caller.cancelled() != asio::cancellation_type::none) {
      // The caller gave up: the work is cancelled, and the race ends with operation_aborted.
      caller_gave_up = true;
      cancel_work();
      if (at_stop == AtStop::leave_work)
        break;
    }
  }
  race->caller_left = caller_gave_up || !race->outcome.settled;
  if (caller_gave_up)
    throw std::system_error(asio::error::operation_aborted);
  co_return std::move(race->outcome);
}

// g++ 12 can report -Wmismatched-new-delete for the coroutine frames below, which Asio allocates
// and frees with its own matching operators (a false positive: GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// The executor the work runs on: the race's strand itself.
struct OnRaceStrand {
  const RaceStrand& operator()(const RaceStrand& strand) const noexcept { return strand; }
};

// Runs `work` on a new strand of the caller's executor until it settles or `stop` is requested,
// whichever comes first; `at_stop` says what becomes of the work then. `on_settle(awaited)` runs
// on that strand the moment the work settles, whether or not anyone still waits for it; `awaited`
// says whether the caller will read this settling as the race's outcome. A caller that
// cancels (terminal) cancels the work; the race then ends with operation_aborted (with
// wait_for_work, once the work has settled). `work_executor(strand)` gives the executor the work
// is spawned on: that strand, or one that runs everything on it and carries more (the call chain
// of async_with_lock).
template <class R, class OnSettle, class WorkExecutor = OnRaceStrand>
asio::awaitable<RaceOutcome<R>> race_against_stop(std::stop_token stop, asio::awaitable<R> work,
                                                  OnSettle on_settle, AtStop at_stop,
                                                  WorkExecutor work_executor = {}) {
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  const RaceStrand strand = asio::make_strand(executor);
  auto race = std::make_shared<RaceState<R>>(strand);
  asio::co_spawn(
      work_executor(strand), std::move(work),
      asio::bind_cancellation_slot(
          race->cancel_work.slot(),
          asio::bind_executor(strand, [race, on_settle = std::move(on_settle)](
                                          std::exception_ptr error, auto... result) mutable {
            race->outcome.settled_at = Clock::now();
            on_settle(!race->caller_left);
            race->outcome.thrown = error;
            if constexpr (sizeof...(result) == 0)
              race->outcome.value.emplace();
            else if (!error)
              race->outcome.value.emplace(std::move(result)...);
            race->outcome.settled = true;
            race->wake.cancel();
          })));
  race->on_stop.emplace(std::move(stop), WakeAtStop<R>{executor, race});
  co_return co_await asio::co_spawn(strand, wait_for_race(race, at_stop), asio::use_awaitable);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold::detail
