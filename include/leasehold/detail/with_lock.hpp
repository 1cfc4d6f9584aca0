// with_lock's and Mutex's machinery: what a callback returns, the chain of a thread's calls, and
// how a call's lease ended (with_lock.hpp).
#pragma once

#include <asio/awaitable.hpp>
#include <cstdint>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "leasehold/clock.hpp"

namespace leasehold {

class LeaseGuard;   // lease_guard.hpp
class LockContext;  // with_lock.hpp
class Locker;       // with_lock.hpp

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

// How a with_lock call's lease ended, judged when its callback settled: lost (the loss was
// reported, or the callback settled after the lease's deadline), revoked (the locker shut down).
struct LockEnding {
  bool lost = false;
  bool revoked = false;
  std::error_code cause;
};
LockEnding lock_ending(const LeaseGuard& guard, Clock::time_point settled_at);
// Throws LockLostError for an ending that was lost or revoked.
void throw_if_lock_lost(std::string_view name, const LockEnding& ending);

}  // namespace detail
}  // namespace leasehold
