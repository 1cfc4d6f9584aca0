// The bodies of Locker::with_lock, with_locks, async_with_lock and async_with_locks
// (with_lock.hpp).
#pragma once

#include <asio/cancellation_signal.hpp>
#include <asio/this_coro.hpp>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "leasehold/detail/race.hpp"

namespace leasehold {

template <class F>
detail::sync_callback_result_t<F> Locker::with_lock(std::string_view name, F&& callback,
                                                    WithLockOptions options,
                                                    std::stop_token caller_stop) {
  validate(name, options);
  const std::string lock_key = key(name);

  // Reentrant: this thread's call chain already holds the lock. Its lease and stop token apply.
  auto& chain = detail::this_thread_chain();
  for (const auto& entry : chain) {
    if (entry.locker == this && entry.key == lock_key) {
      return detail::invoke_callback(callback, entry.stop);
    }
  }

  if (is_shut_down())
    end_after_shutdown(caller_stop);
  std::optional<LockToken<detail::WithLockTag>> token = acquire(name, options, caller_stop);
  if (!token)
    end_after_shutdown(caller_stop);
  return run_held(std::move(*token), {lock_key}, name, callback, options, caller_stop);
}

template <class F>
detail::sync_callback_result_t<F> Locker::with_locks(std::vector<std::string> names, F&& callback,
                                                     WithLockOptions options,
                                                     std::stop_token caller_stop) {
  const NamesAndKeys set = lock_set_of(std::move(names), options);
  // Reentrant: this thread's call chain holds every name already.
  auto& chain = detail::this_thread_chain();
  std::optional<std::stop_token> held_stop;
  std::size_t held = 0;
  for (const std::string& lock_key : set.keys) {
    for (const auto& entry : chain) {
      if (entry.locker == this && entry.key == lock_key) {
        ++held;
        held_stop = entry.stop;
        break;
      }
    }
  }
  if (held == set.keys.size())
    return detail::invoke_callback(callback, *held_stop);
  if (held > 0)
    refuse_partly_held("with_locks");

  if (is_shut_down())
    end_after_shutdown(caller_stop);
  std::optional<LockToken<detail::WithLockTag>> token = acquire_set(set, options, caller_stop);
  if (!token)
    end_after_shutdown(caller_stop);
  return run_held(std::move(*token), set.keys, set.quoted(), callback, options, caller_stop);
}

template <class F>
detail::sync_callback_result_t<F> Locker::run_held(LockToken<detail::WithLockTag> token,
                                                   const std::vector<std::string>& keys,
                                                   std::string_view what, F& callback,
                                                   const WithLockOptions& options,
                                                   std::stop_token caller_stop) {
  using R = detail::sync_callback_result_t<F>;
  const std::vector<std::uint64_t> fences =
      token.fences().empty()
          ? std::vector<std::uint64_t>{token.fence().value_or(0)}
          : std::vector<std::uint64_t>(token.fences().begin(), token.fences().end());
  // Kept alive and registered; its stop token is requested when the lease is lost or the locker
  // shuts down.
  LeaseGuard guard(*this, std::move(token), options.max_hold);
  if (!guard)  // shut down while acquiring: the callback never runs
    end_after_shutdown(caller_stop);

  std::exception_ptr thrown;
  std::optional<detail::Stored<R>> value;
  auto& chain = detail::this_thread_chain();
  for (std::size_t i = 0; i < keys.size(); ++i)
    chain.push_back({this, keys[i], guard.stop_token(), i < fences.size() ? fences[i] : 0});
  try {
    if constexpr (std::is_void_v<R>) {
      detail::invoke_callback(callback, guard.stop_token());
      value.emplace();
    } else {
      value.emplace(detail::invoke_callback(callback, guard.stop_token()));
    }
  } catch (...) {
    thrown = std::current_exception();
  }
  chain.resize(chain.size() - keys.size());
  const Clock::time_point settled_at = Clock::now();
  guard.release();  // as soon as the callback settled
  // The loss outranks what the callback returned or threw.
  detail::throw_if_lock_lost(what, detail::lock_ending(guard, settled_at));
  if (thrown)
    std::rethrow_exception(thrown);
  if constexpr (!std::is_void_v<R>)
    return std::move(*value);
}

namespace detail {

// An async callback's awaitable: callback(chain) if it takes a LockContext, else callback().
template <class F>
auto invoke_async_callback(F& callback, LockContext chain) {
  if constexpr (std::is_invocable_v<F&, LockContext>)
    return callback(std::move(chain));
  else
    return callback();
}

// One async_with_lock call's lease, shared by the call and its callback's completion: after a
// loss the call returns at once, and the callback may run on until it notices the cancellation.
struct AsyncLockCall {
  struct ClearHeld {
    std::shared_ptr<std::atomic<bool>> held;
    void operator()() const noexcept { *held = false; }
  };

  AsyncLockCall(Locker& locker, LockToken<WithLockTag> token, std::chrono::milliseconds max_hold)
      : guard(locker, std::move(token), max_hold),
        clear_at_stop(guard.stop_token(), ClearHeld{held}) {}

  // Settled: stop vouching and judge. A caller that awaits this settling releases the lease and
  // waits for the reply; with no one left to wait, the release is sent at once.
  void settle(bool awaited) noexcept {
    *held = false;
    at_settle = lock_ending(guard, Clock::now());
    if (!awaited)
      guard.send_release();
  }

  LeaseGuard guard;
  // What the callback's LockContext vouches by: cleared at the loss, the shutdown, the end.
  std::shared_ptr<std::atomic<bool>> held = std::make_shared<std::atomic<bool>>(true);
  std::stop_callback<ClearHeld> clear_at_stop;
  LockEnding at_settle;  // written when the callback settles (on the race's strand)
};

// The strand an async callback runs on, carrying the call chain it belongs to: the executor of
// the callback's coroutine, which nested calls ask for (co_await asio::this_coro::executor).
struct CallChainStrand : RaceStrand {
  CallChainStrand(const RaceStrand& strand, LockContext chain,
                  std::shared_ptr<asio::cancellation_slot> owner)
      : RaceStrand(strand), chain(std::move(chain)), owner(std::move(owner)) {}

  LockContext chain;
  // The cancellation slot of the callback's own coroutine, recorded as it starts. A coroutine
  // that the callback spawns runs on this executor too, but it is a coroutine of its own (with a
  // slot of its own): it is not part of the call chain.
  std::shared_ptr<asio::cancellation_slot> owner;
};

struct OnCallChainStrand {
  LockContext chain;
  std::shared_ptr<asio::cancellation_slot> owner;
  CallChainStrand operator()(const RaceStrand& strand) const { return {strand, chain, owner}; }
};

}  // namespace detail

// g++ 12 can report -Wmismatched-new-delete for the coroutine frames below, which Asio allocates
// and frees with its own matching operators (a false positive: GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
template <class F>
asio::awaitable<detail::async_callback_result_t<F>> Locker::async_with_lock(
    LockContext context, std::string name, F callback, WithLockOptions options) {
  validate(name, options);
  std::vector<std::string> keys{key(name)};
  asio::awaitable<LockToken<detail::WithLockTag>> acquire = async_acquire(name, options);
  co_return co_await async_hold(std::move(context), std::move(keys), std::move(name),
                                std::move(acquire), std::move(callback), options);
}

template <class F>
asio::awaitable<detail::async_callback_result_t<F>> Locker::async_with_locks(
    LockContext context, std::vector<std::string> names, F callback, WithLockOptions options) {
  NamesAndKeys set = lock_set_of(std::move(names), options);
  std::vector<std::string> keys = set.keys;
  std::string what = set.quoted();
  asio::awaitable<LockToken<detail::WithLockTag>> acquire =
      async_acquire_set(std::move(set), options);
  co_return co_await async_hold(std::move(context), std::move(keys), std::move(what),
                                std::move(acquire), std::move(callback), options);
}

template <class F>
asio::awaitable<detail::async_callback_result_t<F>> Locker::async_hold(
    LockContext context, std::vector<std::string> keys, std::string what,
    asio::awaitable<LockToken<detail::WithLockTag>> acquire, F callback, WithLockOptions options) {
  using R = detail::async_callback_result_t<F>;
  // The call chain: the context passed in, and the callback this coroutine runs in (if any).
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
  const LockContext implicit = implicit_context(executor, caller.slot());
  // Reentrant: the chain holds every key. The callback runs at once, in this coroutine.
  const std::size_t by_context = context.holds_of(this, keys);
  const std::size_t by_implicit = implicit.holds_of(this, keys);
  if (by_context == keys.size())
    co_return co_await detail::invoke_async_callback(callback, std::move(context));
  if (by_implicit == keys.size())
    co_return co_await detail::invoke_async_callback(callback, implicit);
  if (by_context > 0 || by_implicit > 0)
    refuse_partly_held("async_with_locks");
  if (!context.top_)
    context = implicit;

  LockToken<detail::WithLockTag> token = co_await std::move(acquire);
  const std::shared_ptr<const detail::LeaseState> lease = detail::TokenAccess::state(token);
  auto call = std::make_shared<detail::AsyncLockCall>(*this, std::move(token), options.max_hold);
  if (!call->guard)  // shut down while acquiring: the callback never runs
    co_await stay_pending();
  LockContext inner = context.holding(this, keys, call->held, lease);

  // The callback owns the callable: after a loss this call returns at once, and the callback
  // may run on (until it notices the cancellation) after this frame is gone.
  auto run_owned = [](std::shared_ptr<F> callable, LockContext chain,
                      std::shared_ptr<asio::cancellation_slot> owner) -> asio::awaitable<R> {
    const asio::cancellation_state own = co_await asio::this_coro::cancellation_state;
    *owner = own.slot();
    co_return co_await detail::invoke_async_callback(*callable, std::move(chain));
  };
  // Named, not written inside the co_await: GCC 12 destroys the captures of a lambda written
  // there twice (GCC bug 101976).
  auto settle = [call](bool awaited) { call->settle(awaited); };
  auto owner = std::make_shared<asio::cancellation_slot>();
  detail::OnCallChainStrand on_chain{inner, owner};
  asio::awaitable<R> work =
      run_owned(std::make_shared<F>(std::move(callback)), std::move(inner), std::move(owner));
  detail::RaceOutcome<R> outcome = co_await detail::race_against_stop(
      call->guard.stop_token(), std::move(work), std::move(settle), detail::AtStop::leave_work,
      std::move(on_chain));
  if (outcome.settled)
    co_await call->guard.async_release();  // the keys are free when this call returns
  // A callback that settled after the loss (or the shutdown) was reported, or after the lease's
  // deadline, did not end under the lock. Reentrant calls in the callback took no lease of their
  // own: they are judged here, by this call's lease.
  detail::throw_if_lock_lost(
      what, outcome.settled ? call->at_settle : detail::lock_ending(call->guard, Clock::now()));
  if (outcome.thrown)
    std::rethrow_exception(outcome.thrown);
  if constexpr (!std::is_void_v<R>)
    co_return std::move(*outcome.value);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold
