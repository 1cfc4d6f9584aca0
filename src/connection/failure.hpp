// Why a connection, or a call on it, failed: the error code callers get, and the sentence that
// says what happened and what to do.
#pragma once

#include <string>
#include <system_error>

#include "leasehold/error.hpp"

namespace leasehold::detail {

struct Failure {
  std::error_code error;
  std::string detail;

  explicit operator bool() const noexcept { return static_cast<bool>(error); }
};

// The error with which a retired connection hands back the calls it never sent, and those in
// flight that are retry-safe: a cluster routes them again. It never reaches a caller.
std::error_code route_again_error() noexcept;

}  // namespace leasehold::detail
