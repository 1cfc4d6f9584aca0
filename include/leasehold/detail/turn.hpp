// The turn contract: what a kind of lease supplies so that one generic waiter (wait.hpp) can
// wait in turn for it, as LeaseKind (detail/lease_kind.hpp) is what it supplies to be released and
// extended. A kind implements TurnContract in its own .cpp, with its own scripts; the waiter, its
// schedule and every caller of wait_until() name no kind.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/lease_state.hpp"
#include "leasehold/detail/request.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/query.hpp"
#include "leasehold/request.hpp"
#include "leasehold/turn.hpp"

namespace leasehold::detail {

struct LeaseKind;  // detail/lease_kind.hpp

// Where a refused waiter stands, from its try's reply.
struct TurnSeen {
  // How long until what keeps this waiter out may be gone (a holder's lease; 0: free, but
  // another waiter goes first; < 0: a key without a TTL).
  std::chrono::milliseconds holder_ttl{0};
  std::size_t position = 0;                      // 1: the next to be granted
  std::chrono::milliseconds head_ticket_ttl{0};  // 0: this waiter is the head
};

// What one try found: the granted lease, or where the waiter stands.
struct TurnOutcome {
  std::shared_ptr<LeaseState> state;
  TurnSeen seen;
};

// One waiter, from its WaitTicket (queue.hpp): the id its lease gets, how long its place is kept
// without a renewal, the grace it gives a head ahead of it, and its value as the queue and its
// lease store it (the id and its holder).
struct Waiter {
  LeaseId id;
  std::chrono::milliseconds ticket_ttl;
  std::chrono::milliseconds grace;
  std::string value;
};

class TurnContract {
 public:
  virtual ~TurnContract() = default;

  // The key a wait is reported under (observer events). A queued kind's waiters are told of
  // their turn on this key's release channel (released_channel(key)).
  virtual const std::string& key() const noexcept = 0;
  // Whether the kind keeps a queue: its waiters take a place, are told when it is their turn,
  // and give their place up when they stop. A kind without one (a key other clients' locks
  // share, which must not be marked or queued) is tried again every WaitOptions::poll.
  virtual bool queued() const noexcept = 0;
  // One try in turn: granted, or refused with where the waiter stands. Retry-safe (a retry that
  // finds the waiter's own lease is granted); it grants a lease.
  virtual Request try_request(const Waiter& waiter) const = 0;
  virtual Result<TurnOutcome> parse_try(const Reply& reply, const Timing& timing,
                                        const Waiter& waiter) const = 0;
  // Renews the waiter's place until `until` (the servers' clock, clock.hpp) without a try: a
  // script whose reply is 0 if the waiter is not queued (its next try queues it again), 1 if it
  // is and the lease is free for the waiters ahead (its try then gives them their grace), 2 if
  // it is and the lease is held. Nothing for a kind without a queue.
  virtual std::optional<Request> keep_place_request(
      const Waiter& waiter, std::chrono::system_clock::time_point until) const = 0;
  // Sent when a try's outcome stays unknown: gives back the lease it may have taken.
  virtual Request release_request(const Waiter& waiter) const = 0;
  // Gives the waiter's place up; nothing for a kind without a queue.
  virtual std::optional<Request> leave_request(const Waiter& waiter) const = 0;
};

// The server ms a place renewed until `until` (the servers' clock) runs out at, as a script
// argument (every queued kind's keep_place_request()).
DecimalDigits place_until_ms(std::chrono::system_clock::time_point until);

// A try in turn's reply {1, fence} or {0, blocker ms, place, head ticket ms} as its fields;
// an error reply as its error, anything else as errc::unexpected_reply.
Result<std::vector<long long>> turn_fields(const Reply& reply);

// The lease a try in turn grants: where it lives, its kind, its TTL, whether its reply's fence
// counts.
struct TurnLease {
  const std::string& key;
  const std::string& second_key;
  const LeaseKind* kind;
  std::chrono::milliseconds ttl;
  bool fenced;
};
// Such a reply as its outcome: where a refused waiter stands, or the lease granted to `waiter`
// (an error if it came after the lease's deadline).
Result<TurnOutcome> turn_outcome(const Reply& reply, const Timing& timing, const Waiter& waiter,
                                 const TurnLease& lease);

// Only the kinds make an InTurn, and only the waiter reads its contract.
struct TurnAccess {
  template <class Token>
  static InTurn<Token> make(std::shared_ptr<const TurnContract> contract) {
    return InTurn<Token>(std::move(contract));
  }
  template <class Token>
  static const std::shared_ptr<const TurnContract>& contract(const InTurn<Token>& turn) {
    return turn.contract_;
  }
};

}  // namespace leasehold::detail
