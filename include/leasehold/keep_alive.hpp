// KeepAlive: keeps one lease alive on a client's executor, and reports its loss once.
//
//   auto token = redis.process(invoices.try_lock(42));
//   leasehold::KeepAlive keep_alive(redis, *token);      // extends it every third of its TTL
//   while (more_to_do() && !keep_alive.stop_token().stop_requested())
//     do_a_step();
//   if (!keep_alive.held()) log("lost the lease: ", keep_alive.cause().message());
//   keep_alive.stop();                                   // or let it go out of scope
//
// The first extension is due a third of the TTL after the lease's last grant (counted from the
// token's deadline, so a token kept a while before its keep-alive starts is extended at once).
// With a hold budget (max_hold), the lease is reported lost when the budget is spent, whatever
// Redis says, with the cause errc::hold_budget_exceeded. `false` from an extension means lost,
// at once. A Redis error during an extension means
// "uncertain": it retries until the token's deadline, and only then reports the lease lost, with
// that error as the cause. A client that is closed or refused (AUTH, SELECT) will never answer
// again: that is a loss at once, with its error as the cause. Everything runs as timers on the
// client's executor: 10 000 kept leases cost timers on one thread, not threads.
//
// while_held, with_lock, Mutex and `leasehold run` keep their leases with it; LeaseGuard
// (lease_guard.hpp) pairs it with the release.
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>
#include <system_error>

#include "leasehold/clock.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {

class Client;
class LeaseGuard;

namespace detail {
class KeepAliveState;  // src/lease/keep_alive.cpp
}

class KeepAlive {
 public:
  // Keeps nothing: never lost, never held.
  KeepAlive() noexcept = default;
  // Starts keeping the token's lease alive. The token only lends its lease's state: it may be
  // moved or destroyed meanwhile. `client` must outlive the keep-alive.
  template <class L, class Side>
  KeepAlive(Client& client, const BasicToken<L, Side>& token)
      : KeepAlive(client, detail::TokenAccess::state(token)) {}
  // The same with a hold budget: `max_hold` after this start the extensions stop and the lease is
  // reported lost with the cause errc::hold_budget_exceeded (its stop token requested then), so
  // that work that hangs cannot keep a lock for ever. Zero: no budget.
  template <class L, class Side>
  KeepAlive(Client& client, const BasicToken<L, Side>& token, std::chrono::milliseconds max_hold)
      : KeepAlive(client, detail::TokenAccess::state(token), max_hold) {}

  // Stops it (see stop()).
  ~KeepAlive();
  KeepAlive(KeepAlive&&) noexcept = default;
  // Stops the lease kept so far, then takes the other's.
  KeepAlive& operator=(KeepAlive&& other) noexcept;
  KeepAlive(const KeepAlive&) = delete;
  KeepAlive& operator=(const KeepAlive&) = delete;

  // True once the loss was reported: an extension found the lease expired or taken over, or
  // could not reach Redis before the lease's deadline. Reported once; never after stop().
  bool lost() const noexcept;
  // Why: the Redis error of the last failed extension; empty while held and when the lease
  // expired or was taken over.
  std::error_code cause() const noexcept;
  // Requested at the moment the loss is reported (never by stop()).
  std::stop_token stop_token() const noexcept;
  // Neither lost nor past its deadline at `now`: the loss is reported on the client's I/O
  // thread, which may run late, so "held" also reads the clock.
  bool held(Clock::time_point now = Clock::now()) const noexcept;

  // Ends it without a loss: no extension starts after this, and lost() and cause() keep what
  // they say now. Does not release the lease. Idempotent; any thread.
  void stop() noexcept;

 private:
  friend class LeaseGuard;
  KeepAlive(Client& client, std::shared_ptr<detail::LeaseState> lease,
            std::chrono::milliseconds max_hold = std::chrono::milliseconds::zero());

  std::shared_ptr<detail::KeepAliveState> state_;
};

}  // namespace leasehold
