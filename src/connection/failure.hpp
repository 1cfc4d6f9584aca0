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

}  // namespace leasehold::detail
