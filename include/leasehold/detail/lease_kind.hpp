// What every kind of lease shares: its release and extend scripts (LeaseKind), the requests
// made with them, an acquire's reply, adopting a lease taken elsewhere, and making tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "leasehold/detail/lease_state.hpp"
#include "leasehold/error.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

// A kind of lease: the scripts that release and extend it. Both are called with the lease's keys
// (its key, then its second key if it has one) and ARGV[1] its id; extend also with ARGV[2] the
// TTL in ms. Both answer 1 (released; restarted for another TTL) or 0 (this id holds no lease
// there). Each primitive defines the kinds its acquires grant and hands one to the lease state;
// tokens, their release() and extend() and the heartbeat use it without knowing the primitive.
// A kind whose release also tells the waiters of its name builds that request itself
// (release_request; nullptr: the release script with the lease's keys and id).
struct LeaseKind {
  // Where Redis keeps a lease of this kind, for checks that read it (guarded.hpp): the value of
  // its key, or a member of a set — its key, or its second key — scored with the lease's end.
  enum class HeldAt : std::uint8_t { key_value, key_member, second_key_member };

  const Script& (*release)();
  const Script& (*extend)();
  Request (*release_request)(const LeaseState& state) = nullptr;
  HeldAt held_at = HeldAt::key_value;
  // The extend's request, for a kind whose extend takes more than the key, the second key, the
  // value and the TTL (a lease on several names); null: built from those.
  Request (*extend_request)(const LeaseState& state) = nullptr;
};

// An acquire granted after its own deadline does not count as held: it is an unknown outcome,
// and the client releases it (see Query::on_unknown_outcome) so that it is not left orphaned.
template <class T>
Result<T> granted_too_late() {
  return Result<T>(make_error_code(errc::command_timeout),
                   "the lease was granted after its deadline (the reply came too late); it is "
                   "being released");
}

// A script's 1 or 0 as true or false; an error reply as its error.
inline Result<bool> one_or_zero(const Reply& reply) {
  if (reply.is_error())
    return error_result<bool>(reply);
  if (reply.type != Reply::Type::integer)
    return Result<bool>(make_error_code(errc::unexpected_reply), to_string(reply));
  return reply.integer == 1;
}

// A release's or an extend's reply: its 1 or 0. A lease on names of several slots may instead get
// the array of its parts' replies (one call per slot, on a cluster): true only if every part
// answered 1; an error reply among them is the error. Any other array is unexpected.
inline Result<bool> held_in_every_part(const Reply& reply, const LeaseState& lease) {
  if (reply.type != Reply::Type::array || lease.slot_parts == 0)
    return one_or_zero(reply);
  if (reply.elements.size() != lease.slot_parts)
    return Result<bool>(make_error_code(errc::unexpected_reply), to_string(reply));
  bool every = true;
  for (const Reply& part : reply.elements) {
    Result<bool> held = one_or_zero(part);
    if (!held)
      return held;
    every = every && *held;
  }
  return every;
}

// An extend's reply sent in parts (held_in_every_part) in which some part found the lease gone
// (0) and another extended it (1): the lease is lost, and what the others still hold is given
// back (lease_request(lease, false)).
bool lost_in_some_part(const Reply& reply, const LeaseState& lease) noexcept;

// The release (extend: false) or extend call of a lease, by its kind's scripts.
Request lease_request(const LeaseState& state, bool extend);

// The state of a lease taken elsewhere (another process, an earlier step of a script), named by
// the value its acquire stored (a token's value()). Its deadline is now: this process cannot know
// how long the lease has left until an extend succeeds. Throws Error(errc::invalid_argument) when
// `value` is not a lease's value.
std::shared_ptr<LeaseState> adopted_lease(std::string key, std::string_view value,
                                          std::chrono::milliseconds ttl, const LeaseKind* kind,
                                          std::string second_key = {});

// Tags an acquire that stores its bare id, without the holder's identity: a key that other
// clients' locks share (raw_lock.hpp).
struct BareValue {};

// Makes tokens (only the acquire queries and adopt() do), and hands their shared lease state to
// the layers above (keep-alives, guards).
struct TokenAccess {
  template <class Token>
  static Token make(std::shared_ptr<LeaseState> state) {
    return Token(std::move(state));
  }
  template <class Token>
  static const std::shared_ptr<LeaseState>& state(const Token& token) noexcept {
    return token.state_;
  }
};

}  // namespace leasehold::detail
