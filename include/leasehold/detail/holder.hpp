// The holder's identity as a lease's value carries it (holder.hpp).
#pragma once

#include <string>
#include <string_view>

namespace leasehold::detail {

// What follows a lease's id in its stored value: ";<host>;<pid>;<label>;<Unix ms>", each field
// %-escaped so that it holds no ';', ':', space, '%' or control character (a lock key's waiter
// mark follows a ':', and waiters' ids travel space-separated); empty when identity is off.
// `label` overrides the process's label when not empty.
std::string holder_suffix(std::string_view label = {});
// The process's label now.
std::string holder_label();

}  // namespace leasehold::detail
