// Taking a lock in turn: the queue of a name's waiters, in the order they first asked (as Redis
// saw it), each with a ticket that is a short lease of its own.
//
//   const leasehold::WaitTicket ticket;                  // one per waiter, kept while it waits
//   for (;;) {
//     auto turn = redis.process(leasehold::try_lock_in_turn(jobs, "import", ticket));
//     if (turn.token) break;                              // granted: the lock is ours
//     sleep_for(recheck);  // or less: turn.holder_ttl, turn.head_ticket_ttl say when it may change
//   }
//
// Each call enqueues the ticket (the first time) or renews it, drops the waiters whose ticket ran
// out, and grants the lock if it is free and this ticket is at the head. A waiter that stops
// asking (it died, or gave up without leave_queue()) keeps its place until its ticket runs out,
// and no longer: the one behind it then moves up. try_lock() does not queue: it takes a free lock
// whoever waits.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "leasehold/detail/queue.hpp"
#include "leasehold/detail/turn.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/slot.hpp"

namespace leasehold {

// A waiter's place in the queues it joins: its id (the lease id it gets when granted) and how long
// its place is kept without a renewal.
struct WaitTicket {
  LeaseId id = LeaseId::generate();
  std::chrono::milliseconds ttl{2000};
  // How long a head that does not take a free lock keeps its turn before this waiter, behind it,
  // moves it out of the queue (WaitOptions::grace).
  std::chrono::milliseconds grace{300};
  // The waiter's identity (holder.hpp), fixed for the whole wait: its place in the queue, and
  // the lease it is granted, are the id and this.
  std::string holder = detail::holder_suffix();

  // As the queue and the lease store it.
  std::string value() const { return id.hex() + holder; }
};

// What one try in turn found: the lock (a token), or where the waiter stands.
template <class L>
struct Turn {
  std::optional<LockToken<L>> token;  // granted
  // When not granted: how long the holder's lease has left (0 when the lock is free but another
  // waiter is ahead; negative when the key has no TTL), the waiter's place (1: the head), and how
  // long the head's ticket has left (0 when this waiter is the head).
  std::chrono::milliseconds holder_ttl{0};
  std::size_t position = 0;
  std::chrono::milliseconds head_ticket_ttl{0};
};

// One try in turn at `lock`'s name for `ticket`; a query yielding Turn<L>. Retry-safe (a retry
// that finds its own lease is granted); an unknown outcome releases the lease the try may have
// taken.
template <class L>
class TryLockInTurn {
 public:
  using result_type = Turn<L>;
  using effect = Write<L>;

  TryLockInTurn(std::string key, std::chrono::milliseconds ttl,
                std::optional<detail::FenceCounters> fence, const WaitTicket& ticket)
      : turn_(std::move(key), ttl, std::move(fence)), waiter_(detail::waiter_of(ticket)) {}

  Request request() const { return turn_.try_request(waiter_); }

  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    Result<detail::TurnOutcome> outcome = turn_.parse_try(reply, timing, waiter_);
    if (!outcome)
      return Result<result_type>(outcome.error(), outcome.detail());
    result_type turn;
    if (outcome->state) {
      turn.token.emplace(detail::TokenAccess::make<LockToken<L>>(std::move(outcome->state)));
      return turn;
    }
    turn.holder_ttl = outcome->seen.holder_ttl;
    turn.position = outcome->seen.position;
    turn.head_ticket_ttl = outcome->seen.head_ticket_ttl;
    return turn;
  }

  std::optional<Request> on_unknown_outcome() const { return turn_.release_request(waiter_); }

  // The waiter as its queue and its lease store it (WaitTicket::value()).
  const std::string& value() const noexcept { return waiter_.value; }

 private:
  detail::LockTurn turn_;
  detail::Waiter waiter_;
};

// Leaves the queue of a name (a waiter that gives up); a query yielding true if the ticket was
// queued there. Retry-safe.
template <class L>
class LeaveQueue {
 public:
  using result_type = bool;
  using effect = Write<L>;

  LeaveQueue(std::string_view lock_key, const WaitTicket& ticket)
      : key_(lock_key), waiting_(lock_key), value_(ticket.value()) {}

  Request request() const { return detail::lock_leave_request(key_, waiting_, value_); }
  Result<bool> parse(const Reply& reply, const Timing&) const { return detail::one_or_zero(reply); }

 private:
  std::string key_;
  detail::WaitKeys waiting_;
  std::string value_;
};

template <LockNameType N>
TryLockInTurn<Lock<N>> try_lock_in_turn(const Lock<N>& lock, const N& name,
                                        const WaitTicket& ticket) {
  return TryLockInTurn<Lock<N>>(lock.key(name), lock.ttl(),
                                lock.fencing()
                                    ? std::optional<detail::FenceCounters>(detail::fence_counters(
                                          lock.prefix(), lock.key(name), lock.own_fence_key(name)))
                                    : std::nullopt,
                                ticket);
}

template <LockNameType N>
LeaveQueue<Lock<N>> leave_queue(const Lock<N>& lock, const N& name, const WaitTicket& ticket) {
  return LeaveQueue<Lock<N>>(lock.key(name), ticket);
}

}  // namespace leasehold
