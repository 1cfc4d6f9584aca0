// The RwLock's scripts: src/lease/scripts/rw_*.lua, each with its contract.
#include "leasehold/rwlock.hpp"

#include "lease_scripts.hpp"

namespace leasehold::detail {

const Script& rw_try_read_script() {
  static const Script script{std::string(lua::rw_try_read)};
  return script;
}

const Script& rw_try_write_script() {
  static const Script script{std::string(lua::rw_try_write)};
  return script;
}

const Script& rw_write_release_script() {
  static const Script script{std::string(lua::rw_write_release)};
  return script;
}

const Script& rw_write_extend_script() {
  static const Script script{std::string(lua::rw_write_extend)};
  return script;
}

const Script& rw_read_release_script() {
  static const Script script{std::string(lua::rw_read_release)};
  return script;
}

Request rw_release_request(const LeaseState& state) {
  const WaitKeys waiting(state.key);
  const std::string_view keys[] = {state.key, state.second_key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {state.value, waiting.channel};
  return Request::script(state.kind->release(), keys, args);
}

const Script& rw_in_turn_script() {
  static const Script script{std::string(lua::rw_in_turn)};
  return script;
}

const Script& rw_leave_queue_script() {
  static const Script script{std::string(lua::rw_leave_queue)};
  return script;
}

const Script& rw_force_release_script() {
  static const Script script{std::string(lua::rw_force_release)};
  return script;
}

const Script& rw_read_extend_script() {
  static const Script script{std::string(lua::rw_read_extend)};
  return script;
}

}  // namespace leasehold::detail
