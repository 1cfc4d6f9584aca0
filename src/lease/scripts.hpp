// The scripts of the lease layer that only its own .cpp files send (those the public headers'
// templates send are declared in include/leasehold/detail/), and the releases the kinds' tables
// (LeaseKind, detail/lease_kind.hpp) build. For this layer, the layers above and the tests.
#pragma once

#include "leasehold/lease.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

const Script& lock_release_script();
const Script& lock_extend_script();
const Script& rw_write_release_script();
const Script& rw_write_extend_script();
const Script& rw_read_release_script();
const Script& rw_read_extend_script();
const Script& permit_release_script();
const Script& permit_extend_script();

// The release of a Lock's lease, which tells the head of its queue.
Request lock_lease_release_request(const LeaseState& state);
// The release of an RwLock's lease, which tells the waiters whose turn it is then.
Request rw_release_request(const LeaseState& state);
// The release of a permit, which tells the head of the name's queue.
Request permit_release_request(const LeaseState& state);

const Script& key_types_script();
const Script& lease_status_script();
const Script& lock_force_release_script();
const Script& lock_in_turn_script();
const Script& leave_queue_script();
const Script& permit_force_release_script();
const Script& permit_in_turn_script();
const Script& permit_leave_queue_script();
const Script& rw_by_id_script();
const Script& rw_force_release_script();
const Script& rw_in_turn_script();
const Script& rw_leave_queue_script();

}  // namespace leasehold::detail
