// with_lock and Mutex: run a callback under a lock, across every replica.
//
//   leasehold::Locker locker(redis);                       // owns the locks; shutdown() frees them
//   Report report = locker.with_lock("report:daily", [&](std::stop_token stop) {
//     return build_report(stop);                          // may run far longer than the TTL
//   }, {.ttl = 30s, .retry_attempts = 10, .retry_delay = 200ms});
//
//   leasehold::Mutex mutex(locker, "report:daily");        // the same lock, as a Lockable
//   std::scoped_lock hold(mutex);
//
// See docs/with_lock.md for the rules: retries, lost leases, reentrancy, shutdown.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/basic_waitable_timer.hpp>
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
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "leasehold/client.hpp"
#include "leasehold/detail/timer.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/while_held.hpp"

namespace leasehold {

// The lock could not be taken within the attempts: someone else held it. The callback did not run.
class AcquireError : public Error {
 public:
  using Error::Error;
};

// The lease was lost while the callback ran. cause(): the Redis error when an extension failed
// with one; empty when the lease expired or was taken over (or the locker shut down).
class LockLostError : public Error {
 public:
  LockLostError(std::error_code cause, const std::string& detail)
      : Error(make_error_code(errc::lease_lost), detail), cause_(cause) {}
  std::error_code cause() const noexcept { return cause_; }

 private:
  std::error_code cause_;
};

struct WithLockOptions {
  static constexpr int forever = -1;

  std::chrono::milliseconds ttl{30000};        // the lease's TTL; extended every ttl/3
  int retry_attempts = 10;                     // more attempts after the first; forever: no end
  std::chrono::milliseconds retry_delay{200};  // between attempts
  double retry_jitter = 0.0;                   // 0..1: each delay is +-(jitter * delay) random
};

class Locker;

// The call chain of an async with_lock: the callback receives one and passes it to nested calls.
// Nested calls with it on a key the chain holds run at once; calls without it wait for the lock.
// It vouches for a lock only while that lock's call holds it: a context kept after its callback
// settled, or after the lease was lost or the locker shut down, holds nothing (nested calls with
// it wait for the lock like any other).
class LockContext {
 public:
  LockContext() = default;
  bool holds(const Locker* locker, std::string_view key) const;
  // The fencing number of the lease this chain holds on `name` of a fencing Locker.
  std::optional<std::uint64_t> fence(const Locker& locker, std::string_view name) const;

 private:
  friend class Locker;
  struct Node {
    const Locker* locker;
    std::string key;
    std::shared_ptr<const Node> parent;
    std::uint64_t fence = 0;
    // True from the acquire until the callback settles or the lease is lost (or shut down).
    std::shared_ptr<const std::atomic<bool>> held;
    std::shared_ptr<const detail::LeaseState> lease;
    bool vouches() const;
  };
  explicit LockContext(std::shared_ptr<const Node> top) : top_(std::move(top)) {}
  std::shared_ptr<const Node> top_;
};

namespace detail {

// A lock tag: with_lock's and Mutex's locks have keys of their own ("<prefix>:<key>").
struct WithLockTag {};

// What a callback returns: callback(std::stop_token) if it takes one, else callback().
template <class F, bool = std::is_invocable_v<F&, std::stop_token>>
struct sync_callback_result {
  using type = std::invoke_result_t<F&, std::stop_token>;
};
template <class F>
struct sync_callback_result<F, false> {
  using type = std::invoke_result_t<F&>;
};
template <class F>
using sync_callback_result_t = typename sync_callback_result<F>::type;

template <class F>
decltype(auto) invoke_callback(F& callback, std::stop_token stop) {
  if constexpr (std::is_invocable_v<F&, std::stop_token>)
    return callback(std::move(stop));
  else
    return callback();
}

template <class T>
struct awaitable_value;
template <class T, class E>
struct awaitable_value<asio::awaitable<T, E>> {
  using type = T;
};

// What an async callback's awaitable yields: callback(LockContext) if it takes one, else
// callback().
template <class F, bool = std::is_invocable_v<F&, LockContext>>
struct async_callback_result {
  using type = typename awaitable_value<std::invoke_result_t<F&, LockContext>>::type;
};
template <class F>
struct async_callback_result<F, false> {
  using type = typename awaitable_value<std::invoke_result_t<F&>>::type;
};
template <class F>
using async_callback_result_t = typename async_callback_result<F>::type;

// The sync call chain: what this thread's with_lock calls hold, innermost last.
struct ChainEntry {
  const Locker* locker;
  std::string key;
  std::stop_token stop;
  std::uint64_t fence = 0;
};
std::vector<ChainEntry>& this_thread_chain();

}  // namespace detail

// A Locker whose locks all carry fencing numbers (docs/with_lock.md).
enum class Fencing : bool { off, on };

class Locker {
 public:
  explicit Locker(Client& client, std::string prefix = std::string(kDefaultPrefix),
                  Fencing fencing = Fencing::off);
  ~Locker();  // shutdown()s; never throws
  Locker(const Locker&) = delete;
  Locker& operator=(const Locker&) = delete;

  Client& client() const noexcept { return client_; }
  // The Redis key of the lock named `name`: "<prefix>:<name>"; with fencing
  // "<prefix>:{<escaped name>}", whose counter "<prefix>:{<escaped name>}:fence" shares its slot.
  std::string key(std::string_view name) const;
  std::string fence_key(std::string_view name) const;
  bool fencing() const noexcept { return fencing_ == Fencing::on; }

  // Inside a with_lock callback on this thread (or a Mutex's), the fencing number of the lease
  // this thread holds on `name`; nothing without fencing or when this thread holds no such lease.
  std::optional<std::uint64_t> fence(std::string_view name) const;

  // Runs callback() or callback(std::stop_token) under the lock `name` and returns what it
  // returns. Throws AcquireError (busy within the attempts; the callback did not run),
  // LockLostError (the lease was lost while it ran; its stop token was requested at that moment),
  // leasehold::Error (Redis failed while acquiring), or whatever the callback threw.
  template <class F>
  detail::sync_callback_result_t<F> with_lock(std::string_view name, F&& callback,
                                              WithLockOptions options = {}) {
    return with_lock(name, std::forward<F>(callback), options, std::stop_token{});
  }

  // The same; after shutdown() the call blocks until `caller_stop` is requested, then throws
  // Error(errc::closed).
  template <class F>
  detail::sync_callback_result_t<F> with_lock(std::string_view name, F&& callback,
                                              WithLockOptions options, std::stop_token caller_stop);

  // The async form: callback() or callback(LockContext) returns an asio::awaitable<R>. On a lost
  // lease it throws LockLostError at once, without waiting for the callback, which is cancelled;
  // likewise when the callback settles after the lease's deadline.
  // After shutdown() it stays pending until the caller cancels it.
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_with_lock(
      std::string name, F callback, WithLockOptions options = {}) {
    return async_with_lock(LockContext{}, std::move(name), std::move(callback), options);
  }
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_with_lock(LockContext context,
                                                                      std::string name, F callback,
                                                                      WithLockOptions options = {});

  // Releases every lock this locker holds (one batch, bounded by the command timeout), requests
  // the stop token of every callback still running, and makes every later with_lock never run
  // its callback. Idempotent, never throws.
  void shutdown() noexcept;
  bool is_shut_down() const;

  // For Mutex and the async form: the registry of held leases.
  using HeldId = std::uint64_t;
  // Nothing if the locker shut down meanwhile (then the caller releases the lease itself).
  std::optional<HeldId> register_held(std::shared_ptr<detail::LeaseState> lease,
                                      std::function<void()> on_shutdown);
  void unregister_held(HeldId id);
  // The acquire of the lock `name` (a fenced acquire with fencing).
  TryLock<detail::WithLockTag> try_lock_query(std::string_view name,
                                              std::chrono::milliseconds ttl) const;
  // Waits `delay` (with jitter); false if the locker shut down or `stop` was requested meanwhile.
  bool wait_between_attempts(std::chrono::milliseconds delay, double jitter, std::stop_token stop);
  std::chrono::milliseconds jittered(std::chrono::milliseconds delay, double jitter);
  // Blocks until `stop` is requested; the fate of calls made after shutdown().
  void block_after_shutdown(std::stop_token stop);
  static void validate(std::string_view name, const WithLockOptions& options);
  // Best-effort release; never throws.
  void release_quietly(const std::shared_ptr<detail::LeaseState>& lease) noexcept;
  // The same without waiting for the reply (sent at once); for coroutines on any executor.
  void release_quietly_async(const std::shared_ptr<detail::LeaseState>& lease) noexcept;

 private:
  Client& client_;
  std::string prefix_;
  Fencing fencing_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool shut_down_ = false;
  HeldId next_id_ = 0;
  struct HeldLease {
    std::shared_ptr<detail::LeaseState> lease;
    std::function<void()> on_shutdown;
  };
  std::map<HeldId, HeldLease> held_;
};

template <class F>
detail::sync_callback_result_t<F> Locker::with_lock(std::string_view name, F&& callback,
                                                    WithLockOptions options,
                                                    std::stop_token caller_stop) {
  using R = detail::sync_callback_result_t<F>;
  validate(name, options);
  const std::string lock_key = key(name);

  // Reentrant: this thread's call chain already holds the lock. Its lease and stop token apply.
  auto& chain = detail::this_thread_chain();
  for (const auto& entry : chain) {
    if (entry.locker == this && entry.key == lock_key) {
      return detail::invoke_callback(callback, entry.stop);
    }
  }

  const auto after_shutdown = [&]() -> R {
    block_after_shutdown(caller_stop);
    throw Error(make_error_code(errc::closed), "the locker was shut down");
  };
  if (is_shut_down())
    return after_shutdown();

  // Acquire: the first attempt at once, then up to retry_attempts more, retry_delay apart.
  std::optional<LockToken<detail::WithLockTag>> token;
  for (int attempt = 0;; ++attempt) {
    token = client_.process(try_lock_query(name, options.ttl));
    if (token)
      break;
    if (options.retry_attempts != WithLockOptions::forever && attempt >= options.retry_attempts) {
      throw AcquireError(make_error_code(errc::lock_busy),
                         "could not take the lock '" + std::string(name) + "' in " +
                             std::to_string(attempt + 1) + " attempts");
    }
    if (!wait_between_attempts(options.retry_delay, options.retry_jitter, caller_stop)) {
      if (caller_stop.stop_requested() && !is_shut_down())
        throw Error(make_error_code(errc::closed), "with_lock was cancelled by its stop token");
      return after_shutdown();
    }
  }
  // Stopped while the acquire was in flight: the lease it got anyway is given back, unused.
  if (caller_stop.stop_requested()) {
    release_quietly(token->state());
    throw Error(make_error_code(errc::closed), "with_lock was cancelled by its stop token");
  }

  // The callback's stop token: requested when the lease is lost or the locker shuts down.
  struct CallState {
    std::stop_source stop;
    std::atomic<bool> shut_down{false};
  };
  auto state = std::make_shared<CallState>();
  std::stop_source& stop = state->stop;
  const std::optional<HeldId> registered = register_held(token->state(), [state] {
    state->shut_down = true;
    state->stop.request_stop();
  });
  if (!registered) {  // shut down while acquiring: the callback never runs
    release_quietly(token->state());
    return after_shutdown();
  }
  const HeldId held_id = *registered;

  std::exception_ptr thrown;
  std::optional<std::conditional_t<std::is_void_v<R>, int, R>> value;
  chain.push_back({this, lock_key, stop.get_token(), token->state()->fence});
  const Held<void> held = while_held(client_, *token, [&](std::stop_token lost) {
    std::stop_callback forward(lost, [&stop] { stop.request_stop(); });
    try {
      if constexpr (std::is_void_v<R>) {
        detail::invoke_callback(callback, stop.get_token());
        value.emplace(0);
      } else {
        value.emplace(detail::invoke_callback(callback, stop.get_token()));
      }
    } catch (...) {
      thrown = std::current_exception();
    }
  });
  chain.pop_back();
  unregister_held(held_id);
  const bool shut_down_meanwhile = state->shut_down;
  if (!shut_down_meanwhile)
    release_quietly(token->state());  // as soon as the callback settled

  if (held.was_lost() || shut_down_meanwhile) {
    const std::error_code cause = held.loss_cause();
    throw LockLostError(
        cause,
        shut_down_meanwhile && !held.was_lost() ? "the locker shut down while the callback ran"
        : cause
            ? "the lease on '" + std::string(name) + "' could not be extended: " + cause.message()
            : "the lease on '" + std::string(name) + "' expired or was taken over");
  }
  if (thrown)
    std::rethrow_exception(thrown);
  if constexpr (!std::is_void_v<R>)
    return std::move(*value);
}

// g++ 12 can report -Wmismatched-new-delete for the coroutine frames below, which Asio allocates
// and frees with its own matching operators (a false positive: GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
template <class F>
asio::awaitable<detail::async_callback_result_t<F>> Locker::async_with_lock(
    LockContext context, std::string name, F callback, WithLockOptions options) {
  using R = detail::async_callback_result_t<F>;
  validate(name, options);
  const std::string lock_key = key(name);
  const auto executor = co_await asio::this_coro::executor;

  auto call = [&](LockContext inner) -> asio::awaitable<R> {
    if constexpr (std::is_invocable_v<F&, LockContext>)
      return callback(std::move(inner));
    else
      return callback();
  };

  // Reentrant: the context passed in holds this key.
  if (context.holds(this, lock_key))
    co_return co_await call(context);

  const auto pending_forever = [&]() -> asio::awaitable<void> {
    // After shutdown: never completes normally; the caller's cancellation ends the wait.
    detail::Timer forever(executor, Clock::time_point::max());
    co_await forever.async_wait(asio::use_awaitable);
    throw Error(make_error_code(errc::closed), "the locker was shut down");
  };
  if (is_shut_down()) {
    co_await pending_forever();
  }

  std::optional<LockToken<detail::WithLockTag>> token;
  for (int attempt = 0;; ++attempt) {
    const TryLock<detail::WithLockTag> acquire = try_lock_query(name, options.ttl);
    token = co_await client_.async_process(acquire, asio::use_awaitable);
    if (token)
      break;
    if (options.retry_attempts != WithLockOptions::forever && attempt >= options.retry_attempts) {
      throw AcquireError(
          make_error_code(errc::lock_busy),
          "could not take the lock '" + name + "' in " + std::to_string(attempt + 1) + " attempts");
    }
    detail::Timer pause(executor, jittered(options.retry_delay, options.retry_jitter));
    co_await pause.async_wait(asio::use_awaitable);
    if (is_shut_down())
      co_await pending_forever();
  }
  // The caller may have cancelled while the acquire was in flight. A call sent cannot be taken
  // back: a lease it got anyway is given back at once, and the callback never starts.
  const asio::cancellation_state caller_state = co_await asio::this_coro::cancellation_state;
  if (caller_state.cancelled() != asio::cancellation_type::none) {
    release_quietly_async(token->state());
    throw std::system_error(asio::error::operation_aborted);
  }

  // The race: the callback settling, or the lease being lost (or the locker shutting down). Its
  // state lives on a strand of the caller's executor: on an io_context that several threads run,
  // the callback's completion, the reports and the wait would otherwise touch it at once.
  using RaceStrand = asio::strand<asio::any_io_executor>;
  const RaceStrand strand = asio::make_strand(executor);
  struct Race {
    explicit Race(const RaceStrand& strand) : wake(strand, Clock::time_point::max()) {}
    detail::BasicTimer<RaceStrand> wake;
    asio::cancellation_signal cancel_callback;
    bool settled = false;
    Clock::time_point settled_at;
    bool lost = false;
    bool shut_down = false;
    bool lost_before_settling = false;
    bool shut_down_before_settling = false;
    std::error_code cause;
    std::exception_ptr thrown;
    std::optional<std::conditional_t<std::is_void_v<R>, int, R>> value;
  };
  auto race = std::make_shared<Race>(strand);
  // Set where the loss or the shutdown is reported (the client's I/O thread, the thread that
  // shuts down), before the news is posted to the strand: the callback may settle in between,
  // and whatever was reported before it settled decides.
  struct Reports {
    std::atomic<bool> lost{false};
    std::atomic<bool> shut_down{false};
  };
  auto reports = std::make_shared<Reports>();
  // What the callback's LockContext vouches by: cleared at the loss, the shutdown, the end.
  auto context_held = std::make_shared<std::atomic<bool>>(true);
  // The reporters hold the race weakly: it owns a timer of the caller's executor, so it must die
  // there (in this frame or the callback's completion), not on the thread that destroys the
  // heartbeat, maybe after the caller's io_context is gone.
  const std::weak_ptr<Race> weak_race = race;
  auto lease = token->state();
  // Each event sets its flag and wakes the waiting coroutine in one handler on the strand. The
  // reporters hold neither the race nor the strand (whose end needs the caller's io_context):
  // they post to the caller's executor, and the race, if still there, goes on to its strand.
  const auto report = [executor, weak_race](auto record) {
    asio::post(executor, [weak_race, record = std::move(record)]() mutable {
      if (auto race = weak_race.lock()) {
        const RaceStrand on = race->wake.get_executor();
        asio::dispatch(on, [race = std::move(race), record = std::move(record)]() mutable {
          record(*race);
          race->wake.cancel();
        });
      }
    });
  };
  const std::optional<HeldId> registered = register_held(lease, [reports, report, context_held] {
    *context_held = false;
    reports->shut_down = true;
    report([](Race& race) { race.shut_down = true; });
  });
  if (!registered) {  // shut down while acquiring: the callback never runs
    release_quietly(lease);
    co_await pending_forever();
  }
  const HeldId held_id = *registered;
  auto heartbeat = detail::Heartbeat::start(client_, lease,
                                            [reports, report, context_held](std::error_code cause) {
                                              *context_held = false;
                                              reports->lost = true;
                                              report([cause](Race& race) {
                                                race.lost = true;
                                                race.cause = cause;
                                              });
                                            });

  // The spawned callback owns the callable: after a loss this call returns at once, and the
  // callback may run on (until it notices the cancellation) after this frame is gone. It runs on
  // the strand too, so that cancelling it (from the strand) never meets it running.
  auto owned = std::make_shared<F>(std::move(callback));
  auto run_owned = [](std::shared_ptr<F> callable, LockContext inner) -> asio::awaitable<R> {
    if constexpr (std::is_invocable_v<F&, LockContext>) {
      co_return co_await (*callable)(std::move(inner));
    } else {
      co_return co_await (*callable)();
    }
  };
  LockContext inner(std::make_shared<const LockContext::Node>(
      LockContext::Node{this, lock_key, context.top_, lease->fence, context_held, lease}));
  asio::co_spawn(
      strand, run_owned(owned, std::move(inner)),
      asio::bind_cancellation_slot(
          race->cancel_callback.slot(),
          asio::bind_executor(strand, [this, race, reports, heartbeat, lease, held_id,
                                       context_held](std::exception_ptr error, auto... result) {
            *context_held = false;
            race->settled_at = Clock::now();
            race->lost_before_settling = reports->lost;
            race->shut_down_before_settling = reports->shut_down;
            // Settled: stop extending and release at once, whether or not anyone still
            // waits.
            heartbeat->stop();
            unregister_held(held_id);
            if (!race->shut_down_before_settling) {
              client_.async_process(ReleaseLock<detail::WithLockTag>(lease),
                                    [](std::error_code, bool) {});
            }
            race->settled = true;
            race->thrown = error;
            if constexpr (sizeof...(result) == 0)
              race->value.emplace(0);
            else if (!error)
              race->value.emplace(std::move(result)...);
            race->wake.cancel();
          })));

  // Waits on the strand for the race to end, and judges it there: a report may still arrive
  // (on the strand) after this returns, so the caller's coroutine reads only this verdict, and
  // the value or exception that the settled callback left (written once, before `settled`).
  struct Verdict {
    bool settled = false;
    bool lost = false;
    bool shut_down = false;
    Clock::time_point settled_at;
    std::error_code cause;
  };
  const auto wait_for_race =
      [](std::shared_ptr<Race> race) -> asio::awaitable<Verdict, RaceStrand> {
    constexpr asio::use_awaitable_t<RaceStrand> use;
    while (!race->settled && !race->lost && !race->shut_down) {
      std::error_code ignored;
      co_await race->wake.async_wait(asio::redirect_error(use, ignored));
      race->wake.expires_at(Clock::time_point::max());
      const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
      if (caller.cancelled() != asio::cancellation_type::none) {
        // The caller gave up: cancel the callback; it releases the lock when it settles.
        race->cancel_callback.emit(asio::cancellation_type::terminal);
        throw std::system_error(asio::error::operation_aborted);
      }
    }
    if (!race->settled) {
      // Lost (or shut down): tell the caller now; cancel the callback if it listens.
      race->cancel_callback.emit(asio::cancellation_type::terminal);
    }
    // A callback that settled after a loss or a shutdown was reported did not end under the
    // lock, even if this coroutine learnt of both at once.
    co_return Verdict{
        .settled = race->settled,
        .lost = race->settled ? race->lost_before_settling : race->lost,
        .shut_down = race->settled ? race->shut_down_before_settling : race->shut_down,
        .settled_at = race->settled_at,
        .cause = race->cause};
  };
  const Verdict verdict = co_await asio::co_spawn(strand, wait_for_race(race), asio::use_awaitable);
  // A callback that settled after the lease's deadline did not run while held, even if the
  // heartbeat (on the client's I/O thread, which may run late) has not reported the loss yet. As
  // in the sync form, the loss outranks what the callback returned or threw. Reentrant calls in
  // the callback took no lease of their own: they are judged here, by this call's lease.
  if (!verdict.settled || verdict.lost || verdict.shut_down || token->expired(verdict.settled_at)) {
    if (verdict.shut_down && !verdict.lost)
      throw LockLostError({}, "the locker shut down while the callback ran");
    throw LockLostError(verdict.cause,
                        verdict.cause ? "the lease on '" + name +
                                            "' could not be extended: " + verdict.cause.message()
                                      : "the lease on '" + name + "' expired or was taken over");
  }
  if (race->thrown)
    std::rethrow_exception(race->thrown);
  if constexpr (!std::is_void_v<R>)
    co_return std::move(*race->value);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

struct MutexOptions {
  std::chrono::milliseconds ttl{30000};        // extended every ttl/3 while locked
  std::chrono::milliseconds retry_delay{200};  // between attempts of lock() and try_lock_for()
};

// A classic lock object on a with_lock key: lock(), try_lock(), try_lock_for(),
// try_lock_until(), unlock() (Lockable and TimedLockable: works with std::unique_lock and
// std::scoped_lock). It excludes with_lock on the same key; neither can release the other's lock.
// One Mutex is one holder: lock it from one thread at a time, like std::mutex.
class Mutex {
 public:
  Mutex(Locker& locker, std::string name, MutexOptions options = {});
  ~Mutex();  // releases a held lock (best effort); never throws
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Waits as long as it takes; throws leasehold::Error if Redis fails, Error(errc::closed) if the
  // locker shut down.
  void lock();
  // One attempt.
  bool try_lock();
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_until(std::chrono::steady_clock::now() + timeout);
  }
  template <class TimePoint>
  bool try_lock_until(const TimePoint& deadline) {
    return try_lock_until_steady(std::chrono::steady_clock::now() +
                                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     deadline - TimePoint::clock::now()));
  }
  // Releases; never throws (a failed release leaves the key to expire with its TTL).
  void unlock() noexcept;

  // True if the lease was lost while locked (it expired, was taken over, or Redis stayed
  // unreachable until its deadline), or its deadline has passed while locked: the heartbeat may
  // report the loss late. Stays true after unlock(), until the next lock.
  bool lost() const;
  const std::string& key() const noexcept { return key_; }
  // The fencing number of the held lease (a fencing Locker's); nothing when unlocked.
  std::optional<std::uint64_t> fence() const;

 private:
  bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline);
  bool attempt();

  Locker& locker_;
  std::string name_;
  std::string key_;
  MutexOptions options_;
  std::optional<LockToken<detail::WithLockTag>> token_;
  std::shared_ptr<detail::Heartbeat> heartbeat_;
  std::shared_ptr<std::atomic<bool>> lost_ = std::make_shared<std::atomic<bool>>(false);
  Locker::HeldId held_id_ = 0;
};

}  // namespace leasehold
