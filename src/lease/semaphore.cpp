// The Semaphore's scripts: src/lease/scripts/permit_*.lua, each with its contract.
#include "leasehold/semaphore.hpp"

#include "lease_scripts.hpp"

namespace leasehold::detail {

const Script& permit_acquire_script() {
  static const Script script{std::string(lua::permit_acquire)};
  return script;
}

const Script& permit_release_script() {
  static const Script script{std::string(lua::permit_release)};
  return script;
}

const Script& permit_extend_script() {
  static const Script script{std::string(lua::permit_extend)};
  return script;
}

Request permit_release_request(const LeaseState& state) {
  const WaitKeys waiting(state.key);
  const std::string_view keys[] = {state.key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {state.value, waiting.channel};
  return Request::script(permit_release_script(), keys, args);
}

const Script& permit_in_turn_script() {
  static const Script script{std::string(lua::permit_in_turn)};
  return script;
}

const Script& permit_leave_queue_script() {
  static const Script script{std::string(lua::permit_leave_queue)};
  return script;
}

}  // namespace leasehold::detail
