// What a cluster sends for each request of an operation: the request itself, the form it gives a
// cluster (Request::on_cluster_as: a fenced grant counts on its slot's fence counter there), or
// the parts it is split into (Request::split_by_slot: a script over names of several slots, run
// once per slot's names).
#pragma once

#include <memory>

#include "leasehold/detail/operation.hpp"

namespace leasehold::detail {

// `operation` with each of its requests replaced by what a cluster sends for it: its cluster
// form, or its (form's) parts when they go in its place, whose replies make an array that is the
// request's reply. `operation` itself when it has neither.
std::unique_ptr<Operation> sent_in_cluster_forms(std::unique_ptr<Operation> operation);

}  // namespace leasehold::detail
