// The completion handler for asio::co_spawn in tests: an exception the coroutine threw leaves
// io.run() (and fails the test) instead of vanishing with the coroutine.
#pragma once

#include <exception>

namespace leasehold::testing {

inline void rethrow_failure(std::exception_ptr error) {
  if (error)
    std::rethrow_exception(error);
}

}  // namespace leasehold::testing
