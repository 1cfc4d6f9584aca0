// What Clock reads besides the host's clock, and how a connection notes the servers' (clock.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace leasehold::detail {

// Added to every Clock reading: tests simulate a suspend of the host with shift_clock().
extern std::atomic<std::int64_t> clock_shift_ns;

// Notes a connection's measurement for server_clock_now().
void note_server_clock_offset(std::chrono::nanoseconds server_minus_local) noexcept;

// For tests: moves Clock forward by `by`, as a suspend of that long would (timers due by then
// fire within ClockWaitTraits::kSlice).
inline void shift_clock(std::chrono::nanoseconds by) noexcept {
  clock_shift_ns.fetch_add(by.count(), std::memory_order_relaxed);
}

}  // namespace leasehold::detail
