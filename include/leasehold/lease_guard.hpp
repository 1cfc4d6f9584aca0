// LeaseGuard: one held lease from its acquire to its release. It keeps the lease alive
// (KeepAlive), registers it with a Locker if given one (so that Locker::shutdown() can take it
// back), and releases it at the end.
//
//   if (auto token = redis.process(jobs.try_lock("import"))) {
//     leasehold::LeaseGuard guard(redis, std::move(*token));   // kept alive from here
//     while (more_to_do() && !guard.stop_token().stop_requested())
//       do_a_step();
//     const bool held = guard.held();                          // judged when the work ended
//     guard.release();                                         // or let it go out of scope
//   }
//
// with_lock, Mutex and `leasehold run` hold their leases with it.
#pragma once

#include <asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "leasehold/clock.hpp"
#include "leasehold/keep_alive.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {

class Client;
class Locker;

namespace detail {
struct GuardState;  // src/policy/lease_guard.cpp
}

class LeaseGuard {
 public:
  // Holds nothing.
  LeaseGuard() noexcept = default;
  // Takes over the token's lease and keeps it alive until the release. `client` (the one that
  // acquired it) must outlive the guard.
  template <class L, class Side>
  LeaseGuard(Client& client, BasicToken<L, Side> token)
      : LeaseGuard(client, detail::TokenAccess::state(token)) {}
  // The same, registered with `locker` until the release: its shutdown() releases the lease (in
  // one batch with the others) and revokes it here. If the locker has shut down already, the
  // lease is released at once (without waiting) and the guard holds nothing.
  template <class L, class Side>
  LeaseGuard(Locker& locker, BasicToken<L, Side> token)
      : LeaseGuard(locker, detail::TokenAccess::state(token)) {}
  // Either, with a hold budget (keep_alive.hpp): lost with errc::hold_budget_exceeded once held
  // for `max_hold` (zero: no budget).
  template <class L, class Side>
  LeaseGuard(Client& client, BasicToken<L, Side> token, std::chrono::milliseconds max_hold)
      : LeaseGuard(client, detail::TokenAccess::state(token), max_hold) {}
  template <class L, class Side>
  LeaseGuard(Locker& locker, BasicToken<L, Side> token, std::chrono::milliseconds max_hold)
      : LeaseGuard(locker, detail::TokenAccess::state(token), max_hold) {}

  // release()s a lease still held; never throws.
  ~LeaseGuard();
  LeaseGuard(LeaseGuard&& other) noexcept;
  LeaseGuard& operator=(LeaseGuard&& other) noexcept;
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;

  // True from a successful construction until the release.
  explicit operator bool() const noexcept;

  // The lease's id, key, fencing number (0: none) and client-side deadline; on a guard that took
  // a lease (released or not).
  const LeaseId& id() const noexcept { return lease_->id; }
  const std::string& key() const noexcept { return lease_->key; }
  std::optional<std::uint64_t> fence() const noexcept;
  Clock::time_point deadline() const noexcept { return lease_->deadline(); }

  // What keeps the lease alive: lost(), cause(), its own stop token.
  const KeepAlive& keep_alive() const noexcept;
  // True once the Locker shut down and took the lease back (released it, with the others).
  bool revoked() const noexcept;
  // Requested when the lease is lost or revoked: what work done under it should watch.
  std::stop_token stop_token() const noexcept;
  // Neither lost nor revoked, and not past its deadline at `now` (the loss is reported on the
  // client's I/O thread, which may run late). After the release the keep-alive says no more: pass
  // the moment the work ended as `now` to judge that work.
  bool held(Clock::time_point now = Clock::now()) const noexcept;

  // Stops the keep-alive, leaves the Locker, and releases the lease (unless the Locker took it
  // back already), waiting for the reply up to the client's command timeout; on the client's
  // own I/O thread it does not wait. A failed release is not reported: the key expires with its
  // TTL. Idempotent; never throws.
  void release() noexcept;
  // The same, but never waits for the reply: for handlers.
  void send_release() noexcept;
  // The same, for a coroutine: completes when the reply came (or the release failed), so that
  // the key is free when it returns. The holding ends at the call. Cancelling the coroutine
  // does not stop a release sent; one cancelled before it was sent throws operation_aborted at
  // once, and the release is sent without waiting.
  asio::awaitable<void> async_release();

 private:
  LeaseGuard(Client& client, std::shared_ptr<detail::LeaseState> lease,
             std::chrono::milliseconds max_hold = std::chrono::milliseconds::zero());
  LeaseGuard(Locker& locker, std::shared_ptr<detail::LeaseState> lease,
             std::chrono::milliseconds max_hold = std::chrono::milliseconds::zero());
  void start(Client& client, Locker* locker, std::chrono::milliseconds max_hold);
  // Ends the holding; the lease to release, or null when there is nothing (left) to release.
  std::shared_ptr<detail::LeaseState> end_holding() noexcept;

  Client* client_ = nullptr;
  std::shared_ptr<detail::LeaseState> lease_;
  std::shared_ptr<detail::GuardState> state_;
  bool ended_ = false;
};

}  // namespace leasehold
