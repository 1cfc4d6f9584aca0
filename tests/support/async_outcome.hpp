// How an asio::awaitable<int> (an async_with_lock call) ended, run to completion on an io_context:
// its value, or the message of the LockLostError it threw. Any other exception leaves io.run().
#pragma once

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <exception>
#include <optional>
#include <string>

#include "leasehold/with_lock.hpp"

namespace leasehold::testing {

struct AsyncOutcome {
  std::optional<int> value;
  std::optional<std::string> lost;  // LockLostError::what()
};

inline AsyncOutcome run_to_outcome(asio::io_context& io, asio::awaitable<int> call) {
  AsyncOutcome outcome;
  asio::co_spawn(io, std::move(call), [&](std::exception_ptr error, int value) {
    if (!error) {
      outcome.value = value;
      return;
    }
    try {
      std::rethrow_exception(error);
    } catch (const LockLostError& e) {
      outcome.lost = e.what();
    }
  });
  io.run();
  return outcome;
}

}  // namespace leasehold::testing
