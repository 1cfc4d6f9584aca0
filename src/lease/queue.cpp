#include "leasehold/queue.hpp"

#include "lease_scripts.hpp"

namespace leasehold::detail {

// The scripts' contracts are in src/lease/scripts/.

const Script& lock_in_turn_script() {
  static const Script script{std::string(lua::lock_in_turn)};
  return script;
}

const Script& leave_queue_script() {
  static const Script script{std::string(lua::lock_leave_queue)};
  return script;
}

Result<std::vector<long long>> turn_fields(const Reply& reply) {
  if (reply.is_error())
    return error_result<std::vector<long long>>(reply);
  const bool well_formed = reply.type == Reply::Type::array &&
                           (reply.elements.size() == 2 || reply.elements.size() == 4);
  std::vector<long long> fields;
  for (std::size_t i = 0; well_formed && i < reply.elements.size(); ++i) {
    if (reply.elements[i].type != Reply::Type::integer)
      break;
    fields.push_back(reply.elements[i].integer);
  }
  if (!well_formed || fields.size() != reply.elements.size() ||
      (fields[0] == 0) != (fields.size() == 4))
    return Result<std::vector<long long>>(
        make_error_code(errc::unexpected_reply),
        "an unexpected reply to a try in turn: " + to_string(reply));
  return fields;
}

}  // namespace leasehold::detail
