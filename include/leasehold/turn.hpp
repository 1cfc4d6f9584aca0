// InTurn<Token>: a wait in turn for a lease, as a value. Each kind makes its own (Lock::in_turn(),
// RwLock::read_in_turn() and write_in_turn(), Semaphore::in_turn(), RawLock::in_turn()), and
// wait_until() (wait.hpp) waits for any of them, as WaitOptions say:
//
//   auto token = leasehold::wait_until(redis, jobs.in_turn("import"), deadline);
#pragma once

#include <chrono>
#include <memory>
#include <utility>

namespace leasehold {

namespace detail {
class TurnContract;
struct TurnAccess;
}  // namespace detail

template <class Token>
class InTurn {
 public:
  using token_type = Token;

 private:
  friend struct detail::TurnAccess;
  explicit InTurn(std::shared_ptr<const detail::TurnContract> contract)
      : contract_(std::move(contract)) {}

  std::shared_ptr<const detail::TurnContract> contract_;
};

// How a wait in turn paces itself (wait_until(), wait.hpp). A waiter is told when its turn may
// have come (a release, a waiter ahead that leaves); while it is, it costs Redis next to nothing:
// the head and the one behind it look again when the holder's lease runs out, and everyone
// renews its place every `recheck`.
struct WaitOptions {
  // While the waiter is told of releases: the longest it goes without looking again, for what
  // tells no one (a key deleted behind the library's back, a message lost in a failover).
  // Less than ticket_ttl (each look renews the waiter's place).
  std::chrono::milliseconds recheck{40000};
  // While it cannot be told (a server without sharded pub/sub, a user not allowed the channel,
  // a subscriber connection down), and for ticket_ttl after the client's subscriber connection
  // came back (a failover may bring back places of waiters that had left): how often it looks
  // instead. Less than ticket_ttl.
  std::chrono::milliseconds recheck_unwatched{1000};
  // How long a waiter that stopped asking (it died) keeps its place. A dead waiter delays those
  // behind it by no more than `grace` once its turn comes, whatever its ticket.
  std::chrono::milliseconds ticket_ttl{120000};
  // How long a waiter whose turn came has to take it before the one behind it may take its place
  // (it is then moved out of the queue; if it lives, its next try queues it again, at the back).
  // Longer than a round trip to Redis and back, or live waiters lose their turn.
  std::chrono::milliseconds grace{300};
  // A wait on a key other clients' locks share (raw_lock.hpp) is told of no release: it tries
  // again this often instead.
  std::chrono::milliseconds poll{100};
};

}  // namespace leasehold
