// Requests a cluster sends as their parts (Request::split_by_slot): a script over names of
// several slots, run once per slot's names.
#pragma once

#include <memory>

#include "leasehold/detail/operation.hpp"

namespace leasehold::detail {

// `operation` with each of its requests that a cluster sends in parts replaced by its parts; the
// array of the parts' replies is that request's reply. `operation` itself when it has none.
std::unique_ptr<Operation> sent_in_parts(std::unique_ptr<Operation> operation);

}  // namespace leasehold::detail
