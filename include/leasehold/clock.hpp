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

#include "leasehold/detail/clock.hpp"

namespace leasehold {

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

// The Redis servers' wall clock as this process last measured it: each connection's setup asks
// the server's TIME and notes how far it is from this host's wall clock (corrected by half the
// round trip). Holder identity stamps leases with it (holder.hpp), so that holders on hosts whose
// clocks disagree are compared on one clock; "held for" is server_clock_now() minus that stamp.
// Before any connection (or when an ACL refuses TIME): this host's clock.
std::chrono::system_clock::time_point server_clock_now() noexcept;

}  // namespace leasehold
