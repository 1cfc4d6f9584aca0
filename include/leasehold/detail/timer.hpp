// Asio timers on leasehold::Clock.
#pragma once

#include <algorithm>
#include <asio/any_io_executor.hpp>
#include <asio/basic_waitable_timer.hpp>
#include <chrono>

#include "leasehold/clock.hpp"

namespace leasehold::detail {

// Asio sleeps on CLOCK_MONOTONIC, which stops while the host is suspended: waiting in slices of
// at most kSlice makes a timer that a suspend made due fire within a slice of the wake-up, not
// when the monotonic clock gets there. (One wake-up a second while a timer is pending.)
struct ClockWaitTraits {
  static constexpr Clock::duration kSlice = std::chrono::seconds(1);

  static Clock::duration to_wait_duration(const Clock::duration& d) { return std::min(d, kSlice); }
  static Clock::duration to_wait_duration(const Clock::time_point& t) {
    const Clock::time_point now = Clock::now();
    if (t <= now)
      return Clock::duration::zero();
    if (t - now > kSlice)  // also where t - now would overflow (t = time_point::max())
      return kSlice;
    return t - now;
  }
};

template <class Executor = asio::any_io_executor>
using BasicTimer = asio::basic_waitable_timer<Clock, ClockWaitTraits, Executor>;
using Timer = BasicTimer<>;

}  // namespace leasehold::detail
