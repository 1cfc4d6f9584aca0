// The clock of lease deadlines, keep-alives and call timeouts.
//
// Redis expires keys by its own wall time, which runs on while this host is suspended (a laptop
// lid, a paused VM). std::chrono::steady_clock (CLOCK_MONOTONIC) stops during a suspend, so a
// holder that slept past its TTL would wake believing it still held the lease. Clock counts on
// CLOCK_BOOTTIME, which is monotonic and counts the time suspended too.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace leasehold {

namespace detail {
// Added to every Clock reading: tests simulate a suspend of the host with shift_clock().
extern std::atomic<std::int64_t> clock_shift_ns;
}  // namespace detail

struct Clock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    return time_point(duration(static_cast<rep>(now.tv_sec) * 1'000'000'000 + now.tv_nsec +
                               detail::clock_shift_ns.load(std::memory_order_relaxed)));
  }
};

namespace detail {
// For tests: moves Clock forward by `by`, as a suspend of that long would (timers due by then
// fire within ClockWaitTraits::kSlice).
inline void shift_clock(Clock::duration by) noexcept {
  clock_shift_ns.fetch_add(by.count(), std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace leasehold
