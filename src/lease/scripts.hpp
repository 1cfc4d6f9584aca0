// The scripts of the lease layer that only its own .cpp files send (the others are declared in
// the public headers whose templates send them). For this layer and its tests.
#pragma once

#include "leasehold/request.hpp"

namespace leasehold::detail {

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
