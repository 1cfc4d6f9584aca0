// Mutex (with_lock.hpp): a with_lock name as a Lockable, held by a LeaseGuard while locked.
#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "leasehold/detail/wait.hpp"
#include "leasehold/with_lock.hpp"

namespace leasehold {

Mutex::Mutex(Locker& locker, std::string name, MutexOptions options)
    : locker_(locker), name_(std::move(name)), key_(locker.key(name_)), options_(options) {
  Locker::validate(name_, WithLockOptions{.ttl = options.ttl,
                                          .retry_attempts = 0,
                                          .retry_delay = std::chrono::milliseconds(0),
                                          .max_hold = options.max_hold});
  detail::validate(options.waiting);
}

Mutex::~Mutex() {
  unlock();
}

void Mutex::hold(LockToken<detail::WithLockTag> token) {
  LeaseGuard guard(locker_, std::move(token), options_.max_hold);
  if (!guard)  // shut down while acquiring: given back already
    throw Error(make_error_code(errc::closed), "the locker was shut down");
  guard_ = std::move(guard);
  lost_at_unlock_ = false;
  cause_at_unlock_ = {};
}

bool Mutex::attempt() {
  if (guard_) {
    throw Error(make_error_code(errc::invalid_argument),
                "the Mutex '" + name_ + "' is already locked by this object");
  }
  if (locker_.is_shut_down())
    throw Error(make_error_code(errc::closed), "the locker was shut down");
  auto token = locker_.try_once(name_, options_.ttl);
  if (!token)
    return false;
  hold(std::move(*token));
  return true;
}

bool Mutex::wait_until(Clock::time_point deadline) {
  if (guard_) {
    throw Error(make_error_code(errc::invalid_argument),
                "the Mutex '" + name_ + "' is already locked by this object");
  }
  if (locker_.is_shut_down())
    throw Error(make_error_code(errc::closed), "the locker was shut down");
  auto token = locker_.wait_in_turn(name_, options_.ttl, deadline, options_.waiting, {});
  if (!token && locker_.is_shut_down())
    throw Error(make_error_code(errc::closed), "the locker was shut down");
  if (!token)
    return false;
  hold(std::move(*token));
  return true;
}

bool Mutex::try_lock() {
  return attempt();
}

void Mutex::lock() {
  wait_until(Clock::time_point::max());
}

bool Mutex::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero())
    return attempt();
  return wait_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(left));
}

void Mutex::unlock() noexcept {
  if (!guard_)
    return;
  const Clock::time_point unlocked_at = Clock::now();
  guard_.release();
  // Lost, revoked, or held past the deadline: lost(), even if the keep-alive never said so.
  lost_at_unlock_ = !guard_.held(unlocked_at);
  cause_at_unlock_ = guard_.keep_alive().cause();
  guard_ = LeaseGuard();
}

bool Mutex::lost() const {
  // The keep-alive's report may come late (it runs on the client's I/O thread): held() reads the
  // clock too, as with_lock does when its callback returns.
  return guard_ ? !guard_.held() : lost_at_unlock_;
}

std::error_code Mutex::cause() const {
  return guard_ ? guard_.keep_alive().cause() : cause_at_unlock_;
}

std::optional<std::uint64_t> Mutex::fence() const {
  if (!guard_)
    return std::nullopt;
  return guard_.fence();
}

}  // namespace leasehold
