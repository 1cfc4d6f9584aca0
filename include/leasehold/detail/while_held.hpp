// What while_held's templates use (while_held.hpp).
#pragma once

#include <stop_token>
#include <system_error>
#include <type_traits>

namespace leasehold::detail {

[[noreturn]] void throw_lease_lost(std::error_code cause);

template <class Work>
using while_held_result_t = std::invoke_result_t<Work&, std::stop_token>;

}  // namespace leasehold::detail
