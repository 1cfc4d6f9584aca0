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
#include <asio/cancellation_signal.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "leasehold/client.hpp"
#include "leasehold/detail/with_lock.hpp"
#include "leasehold/lease_guard.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/observer.hpp"
#include "leasehold/wait.hpp"

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

  // The lease's TTL; extended every ttl/3.
  std::chrono::milliseconds ttl{30000};
  // How long a busy lock is waited for: retry_attempts x retry_delay after the first attempt
  // (forever: no end; 0: exactly one attempt, no waiting). The waiter queues and is told of each
  // release, so it may get the lock sooner than a retry every retry_delay would, never later.
  int retry_attempts = 10;
  std::chrono::milliseconds retry_delay{200};
  // The hold budget (zero: none): held this long, the lease is no longer extended, the callback's
  // stop token is requested, and the call throws LockLostError with the cause
  // errc::hold_budget_exceeded once the callback returns. For work that may hang.
  std::chrono::milliseconds max_hold{0};
};

class Locker;
namespace detail {
class LockSetTry;  // lock_set.hpp
}  // namespace detail

// The call chain of an async with_lock, made explicit. Calls made from inside an async callback's
// own coroutine (directly, or from coroutines it awaits) belong to its chain without one; a
// callback that takes a LockContext receives its chain, and may hand it to another coroutine
// (one it spawns, a branch of a parallel group), whose calls then belong to the chain too.
// Nested calls on a key the chain holds run at once; calls outside it wait for the lock.
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
  // How many of `keys` (of `locker`'s locks) this chain holds.
  std::size_t holds_of(const Locker* locker, const std::vector<std::string>& keys) const;
  // This chain, then `keys` held by one lease of `locker` (each with its fence: the lease's
  // fences in the order of `keys`), vouched for while `held`.
  LockContext holding(const Locker* locker, const std::vector<std::string>& keys,
                      std::shared_ptr<const std::atomic<bool>> held,
                      std::shared_ptr<const detail::LeaseState> lease) const;
  std::shared_ptr<const Node> top_;
};

// A Locker whose locks all carry fencing numbers (docs/with_lock.md).
enum class Fencing : bool { off, on };

// A Locker whose locks are other clients' locks too (raw_lock.hpp, docs/interop.md): the key is
// the name itself and the value a bare random id, without fencing or holder identity; a busy
// lock is polled every retry_delay (with_lock) or waiting.poll (Mutex).
struct RawKeys {};
inline constexpr RawKeys raw_keys{};

class Locker {
 public:
  // `holder_label`: the label of the leases it takes (holder.hpp); empty: the process's.
  explicit Locker(Client& client, std::string prefix = std::string(kDefaultPrefix),
                  Fencing fencing = Fencing::off, std::string holder_label = {});
  Locker(Client& client, RawKeys);
  ~Locker();  // shutdown()s; never throws
  Locker(const Locker&) = delete;
  Locker& operator=(const Locker&) = delete;

  Client& client() const noexcept { return client_; }
  // The Redis key of the lock named `name`: "<prefix>:<name>"; with fencing
  // "<prefix>:{<escaped name>}", whose fences count in its slot's "<prefix>:Fences{<tag>}" on a
  // Redis Cluster, in "<prefix>:Fences" on a single server (docs/keys.md, "Fence counters"); with
  // raw keys the name itself.
  std::string key(std::string_view name) const;
  std::string fence_counter_key(std::string_view name) const;
  std::string server_fence_counter_key() const;
  // The name's own counter of the per-name layout, "<prefix>:{<escaped name>}:fence", which a
  // grant moves into the fence counter.
  std::string own_fence_key(std::string_view name) const;
  bool fencing() const noexcept { return fencing_ == Fencing::on; }
  bool raw_keys() const noexcept { return raw_; }

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

  // Runs callback() or callback(std::stop_token) under the locks of every name in `names` at
  // once, as one lease (lock_set.hpp): all of them or none, waited for in turn without holding
  // one name while waiting for another (so calls on overlapping names never deadlock, whatever
  // order they list them in), extended together, lost if any is lost. With fencing, fence(name)
  // gives each name's fence inside the callback. Throws as with_lock does, and
  // Error(errc::invalid_argument) for no names, more than 1 000, or raw keys. Reentrant when this
  // thread's calls hold every name already; calls that hold some of them but not all are refused
  // with Error(errc::invalid_argument): the set would wait for a name this thread holds.
  template <class F>
  detail::sync_callback_result_t<F> with_locks(std::vector<std::string> names, F&& callback,
                                               WithLockOptions options = {},
                                               std::stop_token caller_stop = {});

  // The async form: callback() or callback(LockContext) returns an asio::awaitable<R>. On a lost
  // lease it throws LockLostError at once, without waiting for the callback, which is cancelled;
  // likewise when the callback settles after the lease's deadline.
  // After shutdown() it stays pending until the caller cancels it. Reentrant (the callback runs
  // at once) when `context`, or the async callback whose coroutine makes the call, holds `name`.
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_with_lock(
      std::string name, F callback, WithLockOptions options = {}) {
    return async_with_lock(LockContext{}, std::move(name), std::move(callback), options);
  }
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_with_lock(LockContext context,
                                                                      std::string name, F callback,
                                                                      WithLockOptions options = {});

  // The async form of with_locks: every name as one lease, with async_with_lock's rules (a loss
  // throws LockLostError at once; after shutdown() it stays pending until the caller cancels).
  // The LockContext the callback gets holds every name, with each name's fence. Reentrant when
  // `context`, or the async callback whose coroutine makes the call, holds every name; refused
  // with Error(errc::invalid_argument) when it holds some of them but not all.
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_with_locks(
      std::vector<std::string> names, F callback, WithLockOptions options = {}) {
    return async_with_locks(LockContext{}, std::move(names), std::move(callback), options);
  }
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_with_locks(
      LockContext context, std::vector<std::string> names, F callback,
      WithLockOptions options = {});

  // Releases every lock this locker holds (one batch, bounded by the command timeout), requests
  // the stop token of every callback still running, and makes every later with_lock never run
  // its callback. Idempotent, never throws.
  void shutdown() noexcept;
  bool is_shut_down() const;

  // The acquire of the lock `name` (a fenced acquire with fencing), for a caller that holds the
  // lease itself with a LeaseGuard on this locker (lease_guard.hpp).
  TryLock<detail::WithLockTag> try_lock_query(std::string_view name,
                                              std::chrono::milliseconds ttl) const;

  // A lease held under this locker (registered by LeaseGuard), released by its shutdown.
  using HeldId = std::uint64_t;

 private:
  std::optional<detail::FenceCounters> fence_counters(std::string_view name) const;

  // Mutex and LeaseGuard share the registry of held leases and the attempts.
  friend class Mutex;
  friend class LeaseGuard;

  // Nothing if the locker shut down meanwhile (then the caller releases the lease itself).
  std::optional<HeldId> register_held(std::shared_ptr<detail::LeaseState> lease,
                                      std::function<void()> on_shutdown);
  void unregister_held(HeldId id);
  // One attempt at the lock `name` (its query tells the client's observer). Throws the Redis
  // error.
  std::optional<LockToken<detail::WithLockTag>> try_once(std::string_view name,
                                                         std::chrono::milliseconds ttl);
  // Waits in turn for the lock `name` until `deadline`: the token, or nothing when the deadline
  // passed, `stop` was requested or the locker shut down. Throws the Redis error.
  std::optional<LockToken<detail::WithLockTag>> wait_in_turn(std::string_view name,
                                                             std::chrono::milliseconds ttl,
                                                             Clock::time_point deadline,
                                                             const WaitOptions& waiting,
                                                             std::stop_token stop);
  // with_locks' names: without duplicates, in the order a lock set takes them, with their keys.
  struct NamesAndKeys {
    std::vector<std::string> names;
    std::vector<std::string> keys;
    // The names as messages quote a lock's: a', 'b (inside the message's quotes).
    std::string quoted() const {
      std::string text;
      for (const std::string& name : names)
        text += (text.empty() ? "" : "', '") + name;
      return text;
    }
  };
  NamesAndKeys lock_set_of(std::vector<std::string> names, const WithLockOptions& options) const;
  // with_locks' acquire, as acquire() is with_lock's: every name as one lease.
  std::optional<LockToken<detail::WithLockTag>> acquire_set(const NamesAndKeys& set,
                                                            const WithLockOptions& options,
                                                            std::stop_token caller_stop);
  // A set's try, and the waits in turn for each of its names alone (by its place in the set).
  detail::LockSetTry set_attempt(const NamesAndKeys& set, const WithLockOptions& options) const;
  std::function<detail::TurnWait(std::size_t)> set_turns(const NamesAndKeys& set,
                                                         const WithLockOptions& options,
                                                         Clock::time_point deadline) const;
  // Refuses a call on names of which the caller's chain holds some but not all: it would wait
  // for a name its own caller holds.
  [[noreturn]] static void refuse_partly_held(std::string_view call);
  // The callback under `token`'s lease, which this thread's chain then holds as `keys` (each with
  // its fence): the rest of with_lock and with_locks. `what` names the lock in a LockLostError.
  template <class F>
  detail::sync_callback_result_t<F> run_held(LockToken<detail::WithLockTag> token,
                                             const std::vector<std::string>& keys,
                                             std::string_view what, F& callback,
                                             const WithLockOptions& options,
                                             std::stop_token caller_stop);
  // Blocks until `stop` is requested; the fate of calls made after shutdown().
  void block_after_shutdown(std::stop_token stop);
  // block_after_shutdown(), then Error(errc::closed): the end of a sync call after shutdown().
  [[noreturn]] void end_after_shutdown(std::stop_token stop);
  static void validate(std::string_view name, const WithLockOptions& options);
  // Best-effort release; never throws.
  void release_quietly(const std::shared_ptr<detail::LeaseState>& lease) noexcept;
  // The same without waiting for the reply (sent at once); for coroutines on any executor.
  void release_quietly_async(const std::shared_ptr<detail::LeaseState>& lease) noexcept;

  // with_lock's acquire: one attempt with retry_attempts 0, else a wait in turn of retry_attempts
  // x retry_delay. Nothing if the locker shut down meanwhile. Throws AcquireError (busy until the
  // end), Error(errc::closed) (`caller_stop` was requested), or the Redis error.
  std::optional<LockToken<detail::WithLockTag>> acquire(std::string_view name,
                                                        const WithLockOptions& options,
                                                        std::stop_token caller_stop);
  // The async form's; after shutdown() it stays pending until the caller cancels it, and a caller
  // that cancels while an acquire is in flight gets operation_aborted (the lease it took anyway
  // is given back at once).
  asio::awaitable<LockToken<detail::WithLockTag>> async_acquire(std::string name,
                                                                WithLockOptions options);
  // async_with_locks' acquire, likewise.
  asio::awaitable<LockToken<detail::WithLockTag>> async_acquire_set(NamesAndKeys set,
                                                                    WithLockOptions options);
  // The end of an async acquire: AcquireError when busy (`what`: the lock's name or names); a
  // lease taken for a caller that cancelled meanwhile is given back at once (operation_aborted).
  LockToken<detail::WithLockTag> took_async(std::optional<LockToken<detail::WithLockTag>> token,
                                            bool caller_cancelled, std::string_view what,
                                            const WithLockOptions& options);
  // The rest of async_with_lock and async_with_locks, for the lock `keys` (`what`: as a
  // LockLostError names them) under the call chain `context`: reentrant when the chain (or the
  // async callback whose coroutine this is) holds every key; else `acquire` is awaited and the
  // callback runs under its lease.
  template <class F>
  asio::awaitable<detail::async_callback_result_t<F>> async_hold(
      LockContext context, std::vector<std::string> keys, std::string what,
      asio::awaitable<LockToken<detail::WithLockTag>> acquire, F callback, WithLockOptions options);
  // Never completes normally: the fate of async calls after shutdown(). The caller's
  // cancellation ends it.
  static asio::awaitable<void> stay_pending();
  // The call chain of the async callback whose coroutine this is (its executor and its
  // cancellation slot say which); empty anywhere else.
  static LockContext implicit_context(const asio::any_io_executor& executor,
                                      const asio::cancellation_slot& slot);
  detail::TurnWait turn_wait(std::string_view name, std::chrono::milliseconds ttl,
                             Clock::time_point deadline, const WaitOptions& waiting) const;
  // The end of with_lock's wait: retry_attempts x retry_delay from now.
  static Clock::time_point wait_deadline(const WithLockOptions& options);
  // How with_lock waits: in turn; with raw keys, a try every retry_delay.
  WaitOptions waiting(const WithLockOptions& options) const;
  static AcquireError busy(std::string_view name, const WithLockOptions& options);

  Client& client_;
  std::string prefix_;
  Fencing fencing_;
  std::string holder_label_;
  bool raw_ = false;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool shut_down_ = false;
  std::stop_source shutdown_stop_;  // requested by shutdown(): ends the waits in turn
  HeldId next_id_ = 0;
  struct HeldLease {
    std::shared_ptr<detail::LeaseState> lease;
    std::function<void()> on_shutdown;
  };
  std::map<HeldId, HeldLease> held_;
};

struct MutexOptions {
  std::chrono::milliseconds ttl{30000};  // extended every ttl/3 while locked
  WaitOptions waiting{};                 // how lock() and try_lock_for() wait in turn
  // The hold budget (zero: none): locked this long, the lease is no longer extended and lost()
  // turns true, with cause() errc::hold_budget_exceeded.
  std::chrono::milliseconds max_hold{0};
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

  // Waits in turn as long as it takes, told of each release; throws leasehold::Error if Redis
  // fails, Error(errc::closed) if the locker shut down.
  void lock();
  // One attempt, without waiting or queueing.
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
  // unreachable until its deadline, or its max_hold was spent), or its deadline has passed while
  // locked: the keep-alive may report the loss late. Stays true after unlock(), until the next
  // lock.
  bool lost() const;
  // Why it was lost: errc::hold_budget_exceeded (max_hold), the Redis error of the last failed
  // extension, or empty (it expired or was taken over; or it was not lost). Kept as lost() is.
  std::error_code cause() const;
  const std::string& key() const noexcept { return key_; }
  // The fencing number of the held lease (a fencing Locker's); nothing when unlocked.
  std::optional<std::uint64_t> fence() const;

 private:
  bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline);
  bool attempt();
  bool wait_until(Clock::time_point deadline);
  void hold(LockToken<detail::WithLockTag> token);

  Locker& locker_;
  std::string name_;
  std::string key_;
  MutexOptions options_;
  LeaseGuard guard_;  // holds the lease while locked
  bool lost_at_unlock_ = false;
  std::error_code cause_at_unlock_;
};

}  // namespace leasehold

#include "leasehold/impl/with_lock.hpp"
