#include "leasehold/clock.hpp"

namespace leasehold::detail {

std::atomic<std::int64_t> clock_shift_ns{0};

namespace {
std::atomic<std::int64_t> server_clock_offset_ns{0};
}  // namespace

void note_server_clock_offset(std::chrono::nanoseconds server_minus_local) noexcept {
  server_clock_offset_ns.store(server_minus_local.count(), std::memory_order_relaxed);
}

}  // namespace leasehold::detail

namespace leasehold {

std::chrono::system_clock::time_point server_clock_now() noexcept {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(
             detail::server_clock_offset_ns.load(std::memory_order_relaxed)));
}

}  // namespace leasehold
