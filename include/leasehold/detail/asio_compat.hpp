// The one place that names Asio's version-specific (experimental, on Asio 1.22) facilities.
#pragma once

#include <asio/experimental/awaitable_operators.hpp>
#include <asio/experimental/deferred.hpp>
#include <asio/experimental/parallel_group.hpp>

namespace leasehold::detail::asio_compat {

inline constexpr const auto& deferred = asio::experimental::deferred;
using asio::experimental::make_parallel_group;
using asio::experimental::wait_for_one;
namespace awaitable_operators = asio::experimental::awaitable_operators;

}  // namespace leasehold::detail::asio_compat
