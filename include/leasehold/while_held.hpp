// while_held: run work while a heartbeat keeps its lease alive, and stop the work when the lease is
// lost.
//
//   // sync: the work gets a std::stop_token, requested at the moment the lease is lost
//   leasehold::Held<int> held = leasehold::while_held(redis, token, [&](std::stop_token stop) {
//     return rebuild_index(stop);
//   });
//   if (!held) log("lost the lease: ", held.loss_cause().message());
//
//   // async: the work is cancelled when the lease is lost
//   leasehold::Held<int> held =
//       co_await leasehold::async_while_held(redis, token, rebuild_index_async());
//
// The heartbeat extends the lease a third of its TTL after each grant (counted from the token's
// deadline, so a token kept a while before the heartbeat starts is extended at once). `false` from
// an extension means lost, at once. A Redis error during an extension means "uncertain": it retries
// until the token's deadline, and only then declares the lease lost, with that error as the cause.
// Heartbeats are timers on the client's executor: 10 000 held leases cost timers on one thread, not
// threads.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "leasehold/client.hpp"
#include "leasehold/detail/asio_compat.hpp"
#include "leasehold/detail/timer.hpp"
#include "leasehold/detail/unique_function.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {

namespace detail {
[[noreturn]] void throw_lease_lost(std::error_code cause);
}

// The outcome of while_held: the work's result, or "lost" (the lease was lost while it ran).
template <class R>
class Held {
 public:
  explicit Held(R value) : value_(std::move(value)) {}
  static Held lost(std::error_code cause) { return Held(cause); }

  bool was_lost() const noexcept { return !value_.has_value(); }
  explicit operator bool() const noexcept { return value_.has_value(); }
  // Empty when the lease expired or was taken over; the Redis error when the heartbeat could not
  // reach Redis before the lease's deadline.
  std::error_code loss_cause() const noexcept { return cause_; }

  // The work's result; throws Error(errc::lease_lost) if the lease was lost.
  R& value() & {
    if (!value_)
      throw_lost();
    return *value_;
  }
  R&& value() && {
    if (!value_)
      throw_lost();
    return std::move(*value_);
  }
  const R& value() const& {
    if (!value_)
      throw_lost();
    return *value_;
  }
  R& operator*() & { return value(); }
  const R& operator*() const& { return value(); }
  R* operator->() { return &value(); }

 private:
  explicit Held(std::error_code cause) : cause_(cause) {}
  [[noreturn]] void throw_lost() const { detail::throw_lease_lost(cause_); }
  std::optional<R> value_;
  std::error_code cause_;
};

template <>
class Held<void> {
 public:
  Held() = default;
  static Held lost(std::error_code cause) {
    Held held;
    held.lost_ = true;
    held.cause_ = cause;
    return held;
  }
  bool was_lost() const noexcept { return lost_; }
  explicit operator bool() const noexcept { return !lost_; }
  std::error_code loss_cause() const noexcept { return cause_; }
  void value() const {
    if (lost_)
      detail::throw_lease_lost(cause_);
  }

 private:
  bool lost_ = false;
  std::error_code cause_;
};

namespace detail {

// Keeps one lease alive on the client's executor until stopped or lost. Everything runs on the
// client's strand; start() and stop() may be called from any thread.
class Heartbeat : public std::enable_shared_from_this<Heartbeat> {
 public:
  using LostCallback = UniqueFunction<void(std::error_code)>;

  static std::shared_ptr<Heartbeat> start(Client& client, std::shared_ptr<LeaseState> lease,
                                          LostCallback on_lost);
  // No extension starts after this; on_lost is never called after this runs on the strand.
  void stop();

  Heartbeat(Client& client, std::shared_ptr<LeaseState> lease, LostCallback on_lost);

 private:
  void begin();
  void schedule_extend(Clock::time_point at);
  void extend();
  void on_extended(std::error_code ec, bool held);
  void arm_deadline();
  void declare_lost();

  Client& client_;
  std::shared_ptr<LeaseState> lease_;
  LostCallback on_lost_;
  Timer tick_;
  Timer deadline_timer_;
  std::error_code last_error_;
  bool finished_ = false;
};

// The loss as seen by the caller's side.
struct LossRecord {
  std::mutex mutex;
  bool lost = false;
  std::error_code cause;
};

template <class Work>
using while_held_result_t = std::invoke_result_t<Work&, std::stop_token>;

}  // namespace detail

// Runs work(stop_token) on this thread while a heartbeat extends the token's lease. Returns the
// work's result, or Held::lost(cause) if the lease was lost while it ran (the stop token was
// requested at that moment; the call returns once the work does). An exception from the work is
// rethrown after the heartbeat stops.
template <class L, class Side, class Work>
requires std::invocable<Work&, std::stop_token> Held<detail::while_held_result_t<Work>> while_held(
    Client& client, const BasicToken<L, Side>& token, Work&& work) {
  using R = detail::while_held_result_t<Work>;
  auto loss = std::make_shared<detail::LossRecord>();
  auto stop = std::make_shared<std::stop_source>();
  auto heartbeat =
      detail::Heartbeat::start(client, token.state(), [loss, stop](std::error_code cause) {
        {
          std::lock_guard lock(loss->mutex);
          loss->lost = true;
          loss->cause = cause;
        }
        stop->request_stop();
      });
  struct StopOnExit {
    std::shared_ptr<detail::Heartbeat> heartbeat;
    ~StopOnExit() { heartbeat->stop(); }
  } stop_on_exit{heartbeat};

  // Lost if the heartbeat said so, or if the work ended after the lease's deadline: the
  // heartbeat's own deadline check runs on the client's I/O thread, which may run late.
  const std::shared_ptr<detail::LeaseState> lease = token.state();
  auto lost_outcome = [&]() -> std::optional<std::error_code> {
    std::lock_guard lock(loss->mutex);
    if (loss->lost)
      return loss->cause;
    if (Clock::now() >= lease->deadline())
      return std::error_code{};
    return std::nullopt;
  };
  if constexpr (std::is_void_v<R>) {
    work(stop->get_token());
    if (auto cause = lost_outcome())
      return Held<void>::lost(*cause);
    return Held<void>();
  } else {
    R result = work(stop->get_token());
    if (auto cause = lost_outcome())
      return Held<R>::lost(*cause);
    return Held<R>(std::move(result));
  }
}

// Runs the awaitable work while a heartbeat extends the token's lease. When the lease is lost the
// work is cancelled (at its next cancellable co_await) and the result is Held::lost(cause). An
// exception from the work (when the lease was not lost) is rethrown.
template <class L, class Side, class R>
asio::awaitable<Held<R>> async_while_held(Client& client, const BasicToken<L, Side>& token,
                                          asio::awaitable<R> work) {
  auto executor = co_await asio::this_coro::executor;
  const std::shared_ptr<detail::LeaseState> lease = token.state();
  auto loss = std::make_shared<detail::LossRecord>();
  auto signal = std::make_shared<detail::Timer>(executor, Clock::time_point::max());
  auto heartbeat = detail::Heartbeat::start(client, token.state(),
                                            [loss, signal, executor](std::error_code cause) {
                                              {
                                                std::lock_guard lock(loss->mutex);
                                                loss->lost = true;
                                                loss->cause = cause;
                                              }
                                              asio::post(executor, [signal] { signal->cancel(); });
                                            });

  // The work, wrapped so that its result needs no default constructor.
  auto run_work = [](asio::awaitable<R> inner) -> asio::awaitable<std::optional<Held<R>>> {
    if constexpr (std::is_void_v<R>) {
      co_await std::move(inner);
      co_return Held<void>();
    } else {
      co_return Held<R>(co_await std::move(inner));
    }
  };
  auto wait_for_loss = [](std::shared_ptr<detail::Timer> timer) -> asio::awaitable<void> {
    std::error_code ignored;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  };

  auto [order, work_error, work_result, loss_error] =
      co_await detail::asio_compat::make_parallel_group(
          asio::co_spawn(executor, run_work(std::move(work)), detail::asio_compat::deferred),
          asio::co_spawn(executor, wait_for_loss(signal), detail::asio_compat::deferred))
          .async_wait(detail::asio_compat::wait_for_one(), asio::use_awaitable);
  (void)loss_error;
  heartbeat->stop();
  if (order[0] == 0) {
    if (work_error)
      std::rethrow_exception(work_error);
    // Work that ended after the deadline did not end while held (the heartbeat may run late).
    if (Clock::now() >= lease->deadline())
      co_return Held<R>::lost(std::error_code{});
    co_return std::move(*work_result);
  }
  std::lock_guard lock(loss->mutex);
  co_return Held<R>::lost(loss->cause);
}

}  // namespace leasehold
