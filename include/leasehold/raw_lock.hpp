// RawLock: a lock on a key that other clients' locks share. redis-py's Lock, node-redlock on one
// instance and the like take a lock with SET key <random value> NX PX ttl and release it with a
// compare-and-delete; a RawLock does exactly that on exactly the key it is given, so leasehold and
// those clients exclude each other on one key and none releases or extends the other's lock.
//
//   constexpr leasehold::RawLock invoices{30s};
//   if (auto token = redis.process(invoices.try_lock("invoice:42"))) {   // the key, as it is
//     finalize(42);
//     redis.process(token->release());
//   }
//
// What other clients would not understand is not there: the value is the bare id (no holder
// identity), there is no fencing number, and a waiter (lock_until() below) polls instead of
// queueing, since those clients tell no one of their releases. See docs/interop.md.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "leasehold/lock.hpp"
#include "leasehold/wait.hpp"

namespace leasehold {

class RawLock {
 public:
  using name_type = std::string;

  constexpr explicit RawLock(std::chrono::milliseconds ttl) : ttl_(ttl) {
    detail::validate_ttl(ttl);
  }

  constexpr std::chrono::milliseconds ttl() const noexcept { return ttl_; }

  // A query yielding std::optional<LockToken<RawLock>>: SET key <id> NX PX ttl (GET, so that a
  // retry finds its own lease). Throws Error(errc::invalid_argument) for an empty key.
  TryLock<RawLock> try_lock(std::string_view key) const {
    validate_key(key);
    return TryLock<RawLock>(std::string(key), ttl_, detail::BareValue{});
  }

  // A wait for `key`, for wait_until() (wait.hpp): it tries every WaitOptions::poll, since the
  // other clients that share the key tell no one of their releases; it takes no place in a queue
  // and never marks the key. Throws Error(errc::invalid_argument) for an empty key.
  InTurn<LockToken<RawLock>> in_turn(std::string_view key) const {
    validate_key(key);
    return detail::TurnAccess::make<LockToken<RawLock>>(detail::raw_turn(std::string(key), ttl_));
  }

  // A token for the lease on `key` whose value is `value` (as Lock::adopt()).
  LockToken<RawLock> adopt(std::string_view key, std::string_view value) const {
    validate_key(key);
    return detail::TokenAccess::make<LockToken<RawLock>>(
        detail::adopted_lease(std::string(key), value, ttl_, &detail::kLockLease));
  }

  static void validate_key(std::string_view key) {
    if (key.empty())
      throw Error(make_error_code(errc::invalid_argument), "a raw lock key must not be empty");
  }

 private:
  std::chrono::milliseconds ttl_;
};

// Waits for `key` until `deadline`, trying every options.poll (and once at the deadline): the
// token, or std::nullopt when the deadline passed or `stop` was requested. Failures as
// lock_until() of a Lock. Not on the client's I/O thread.
inline std::optional<LockToken<RawLock>> lock_until(Client& client, const RawLock& lock,
                                                    std::string_view key,
                                                    Clock::time_point deadline,
                                                    WaitOptions options = {},
                                                    std::stop_token stop = {}) {
  return detail::wait_until_as("lock_until", client, lock.in_turn(key), deadline, options,
                               std::move(stop));
}

template <class Rep, class Period>
std::optional<LockToken<RawLock>> lock_for(Client& client, const RawLock& lock,
                                           std::string_view key,
                                           std::chrono::duration<Rep, Period> timeout,
                                           WaitOptions options = {}, std::stop_token stop = {}) {
  return lock_until(client, lock, key,
                    Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout), options,
                    stop);
}

// The async form; completion signature void(std::error_code, std::optional<LockToken<RawLock>>).
template <class Token>
auto async_lock_until(Client& client, const RawLock& lock, std::string_view key,
                      Clock::time_point deadline, WaitOptions options, Token&& token) {
  return async_wait_until(client, lock.in_turn(key), deadline, options, std::forward<Token>(token));
}

}  // namespace leasehold
