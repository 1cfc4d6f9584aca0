// Guarded writes: commands that run only while a lease is held, checked and run in one script,
// so that no other holder's write comes between the check and the commands (etcd's IsOwner()
// compare, on Redis). For state kept in the same Redis as the lease; docs/fencing.md.
//
//   auto write = leasehold::guarded(*token);
//   write.call({"HSET", row, "state", "final"}).call({"INCR", count});
//   if (auto replies = redis.process(write))  // nothing: the lease was no longer held
//     use((*replies)[0]);
//
// On a Redis Cluster the commands' keys must be in the lease's hash slot: name them with the
// lease's hash_tag(name) (Lock, RwLock, Semaphore, Election). A cluster client refuses keys of
// other slots before sending anything (errc::cross_slot).
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"

namespace leasehold {

class Guarded {
 public:
  // Yields each command's reply, in order, when the lease was held (every command ran), or
  // nothing when it was not (none ran). A command's error reply fails the query with that error:
  // the commands before it ran, the ones after it did not.
  using result_type = std::optional<std::vector<Reply>>;
  using effect = Write<Command>;

  explicit Guarded(std::shared_ptr<const detail::LeaseState> lease);

  // Adds a command whose only key is its first argument: {"SET", key, value}, {"HSET", key,
  // field, value}, {"INCR", key}, {"DEL", key}, ...
  Guarded& call(std::initializer_list<std::string_view> args);
  Guarded& call(const std::vector<std::string>& args);
  // Adds a command that touches `keys` (every key it names: {"MSET", a, 1, b, 2} touches a and
  // b; none for a command without keys).
  Guarded& call_touching(const std::vector<std::string>& keys,
                         const std::vector<std::string>& args);

  std::size_t size() const noexcept { return commands_; }

  Request request() const;
  Result<result_type> parse(Reply reply, const Timing&) const;

 private:
  void add(const std::string_view* args, std::size_t count);

  std::shared_ptr<const detail::LeaseState> lease_;
  std::vector<std::string> keys_;       // the commands' keys, for routing and the script's KEYS
  std::vector<std::string> arguments_;  // per command: its argument count, then its arguments
  std::size_t commands_ = 0;
};

// The guarded writes of the lease `token` holds (any kind's token: a Lock's, an RwLock writer's
// or reader's, a Semaphore's permit, an Election's leader).
template <class L, class Side>
Guarded guarded(const BasicToken<L, Side>& token) {
  return Guarded(detail::TokenAccess::state(token));
}

}  // namespace leasehold
