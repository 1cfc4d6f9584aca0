// The bodies of while_held and async_while_held (while_held.hpp).
#pragma once

#include <memory>

#include "leasehold/detail/race.hpp"

namespace leasehold {

namespace detail {

// What the keep-alive said when the work settled: the loss if it had been reported, and whether
// the lease was still held then (not past its deadline either).
struct LossAtSettle {
  std::optional<std::error_code> reported;
  bool held = false;
};

inline LossAtSettle loss_at_settle(const KeepAlive& keep_alive, Clock::time_point settled_at) {
  LossAtSettle loss;
  if (keep_alive.lost())
    loss.reported = keep_alive.cause();
  loss.held = keep_alive.held(settled_at);
  return loss;
}

}  // namespace detail

template <class L, class Side, class Work>
requires std::invocable<Work&, std::stop_token> Held<detail::while_held_result_t<Work>> while_held(
    Client& client, const BasicToken<L, Side>& token, Work&& work) {
  return while_held(client, token, std::chrono::milliseconds::zero(), std::forward<Work>(work));
}

template <class L, class Side, class Work>
requires std::invocable<Work&, std::stop_token> Held<detail::while_held_result_t<Work>> while_held(
    Client& client, const BasicToken<L, Side>& token, std::chrono::milliseconds max_hold,
    Work&& work) {
  using R = detail::while_held_result_t<Work>;
  KeepAlive keep_alive(client, token, max_hold);
  // Lost if the keep-alive said so, or if the work ended after the lease's deadline.
  if constexpr (std::is_void_v<R>) {
    work(keep_alive.stop_token());
    if (!keep_alive.held())
      return Held<void>::lost(keep_alive.cause());
    return Held<void>();
  } else {
    R result = work(keep_alive.stop_token());
    if (!keep_alive.held())
      return Held<R>::lost(keep_alive.cause());
    return Held<R>(std::move(result));
  }
}

// g++ 12 can report -Wmismatched-new-delete for the coroutine frames below, which Asio allocates
// and frees with its own matching operators (a false positive: GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

template <class L, class Side, class R>
asio::awaitable<Held<R>> async_while_held(Client& client, const BasicToken<L, Side>& token,
                                          asio::awaitable<R> work,
                                          std::chrono::milliseconds max_hold) {
  KeepAlive keep_alive(client, token, max_hold);
  // Written on the race's strand when the work settles, read once the race has ended.
  auto loss = std::make_shared<detail::LossAtSettle>();
  // Named, not written inside the co_await: GCC 12 destroys the captures of a lambda written
  // there twice (GCC bug 101976).
  auto settle = [loss, keep_alive = &keep_alive](bool /*awaited*/) {
    *loss = detail::loss_at_settle(*keep_alive, Clock::now());
  };
  detail::RaceOutcome<R> outcome = co_await detail::race_against_stop(
      keep_alive.stop_token(), std::move(work), std::move(settle), detail::AtStop::wait_for_work);
  keep_alive.stop();
  if (loss->reported)
    co_return Held<R>::lost(*loss->reported);
  if (outcome.thrown)
    std::rethrow_exception(outcome.thrown);
  // Work that ended after the deadline did not end while held (the loss may be reported late).
  if (!loss->held)
    co_return Held<R>::lost(std::error_code{});
  if constexpr (std::is_void_v<R>)
    co_return Held<void>();
  else
    co_return Held<R>(std::move(*outcome.value));
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold
