#include "leasehold/clock.hpp"

namespace leasehold::detail {

std::atomic<std::int64_t> clock_shift_ns{0};

}  // namespace leasehold::detail
