// while_held: run work while a KeepAlive (keep_alive.hpp) keeps its lease alive, and stop the
// work when the lease is lost.
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
// How the lease is kept, and when it counts as lost: see keep_alive.hpp. Work that ends after
// the lease's deadline did not end while held, even if the loss has not been reported yet.
#pragma once

#include <asio/awaitable.hpp>
#include <concepts>
#include <optional>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>

#include "leasehold/client.hpp"
#include "leasehold/detail/while_held.hpp"
#include "leasehold/keep_alive.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {

// The outcome of while_held: the work's result, or "lost" (the lease was lost while it ran).
template <class R>
class Held {
 public:
  explicit Held(R value) : value_(std::move(value)) {}
  static Held lost(std::error_code cause) { return Held(cause); }

  bool was_lost() const noexcept { return !value_.has_value(); }
  explicit operator bool() const noexcept { return value_.has_value(); }
  // Empty when the lease expired or was taken over; the Redis error when the keep-alive could not
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

// Runs work(stop_token) on this thread while a KeepAlive extends the token's lease. Returns the
// work's result, or Held::lost(cause) if the lease was lost while it ran (the stop token was
// requested at that moment; the call returns once the work does). An exception from the work is
// rethrown after the keep-alive stops.
template <class L, class Side, class Work>
requires std::invocable<Work&, std::stop_token> Held<detail::while_held_result_t<Work>> while_held(
    Client& client, const BasicToken<L, Side>& token, Work&& work);
// The same with a hold budget: once the lease was kept for `max_hold` it is no longer extended,
// the stop token is requested, and the result is Held::lost(errc::hold_budget_exceeded). Zero:
// no budget.
template <class L, class Side, class Work>
requires std::invocable<Work&, std::stop_token> Held<detail::while_held_result_t<Work>> while_held(
    Client& client, const BasicToken<L, Side>& token, std::chrono::milliseconds max_hold,
    Work&& work);

// Runs the awaitable work while a KeepAlive extends the token's lease. When the lease is lost the
// work is cancelled (at its next cancellable co_await) and, once it has settled, the result is
// Held::lost(cause). An exception from the work (when the lease was not lost) is rethrown.
template <class L, class Side, class R>
asio::awaitable<Held<R>> async_while_held(Client& client, const BasicToken<L, Side>& token,
                                          asio::awaitable<R> work,
                                          std::chrono::milliseconds max_hold = {});

}  // namespace leasehold

#include "leasehold/impl/while_held.hpp"
