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

namespace detail {

const Script& lock_in_turn_script();
const Script& leave_queue_script();

Result<std::vector<long long>> turn_fields(const Reply& reply);

}  // namespace detail

// One try in turn at `lock`'s name for `ticket`; a query yielding Turn<L>. Retry-safe (a retry
// that finds its own lease is granted); an unknown outcome releases the lease the try may have
// taken.
template <class L>
class TryLockInTurn {
 public:
  using result_type = Turn<L>;
  using effect = Write<L>;

  TryLockInTurn(std::string key, std::chrono::milliseconds ttl,
                std::optional<std::string> fence_key, const WaitTicket& ticket)
      : key_(std::move(key)),
        queue_(detail::queue_key(key_)),
        tickets_(detail::tickets_key(key_)),
        fence_key_(std::move(fence_key)),
        ttl_(ttl),
        ticket_ttl_(ticket.ttl),
        id_(ticket.id),
        value_(ticket.value()) {}

  Request request() const {
    const detail::DecimalDigits ttl(ttl_.count());
    const detail::DecimalDigits ticket_ttl(ticket_ttl_.count());
    const std::string_view args[] = {value_, ttl.view(), ticket_ttl.view()};
    const std::string_view keys[] = {
        key_, queue_, tickets_, fence_key_ ? std::string_view(*fence_key_) : std::string_view()};
    return Request::script(detail::lock_in_turn_script(), std::span(keys, fence_key_ ? 4 : 3), args)
        .retry_safe()
        .grants_lease();
  }

  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    Result<std::vector<long long>> fields = detail::turn_fields(reply);
    if (!fields)
      return Result<result_type>(fields.error(), fields.detail());
    const std::vector<long long>& f = *fields;
    result_type turn;
    if (f[0] == 0) {
      turn.holder_ttl = std::chrono::milliseconds(f[1]);
      turn.position = static_cast<std::size_t>(f[2]);
      turn.head_ticket_ttl = std::chrono::milliseconds(f[3]);
      return turn;
    }
    const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
    if (timing.received >= deadline)
      return detail::granted_too_late<result_type>();
    auto state = std::make_shared<detail::LeaseState>(key_, id_, ttl_, deadline,
                                                      &detail::kLockLease, std::string(), value_);
    state->fence = fence_key_ ? static_cast<std::uint64_t>(f[1]) : 0;
    turn.token.emplace(detail::TokenAccess::make<LockToken<L>>(std::move(state)));
    return turn;
  }

  std::optional<Request> on_unknown_outcome() const {
    return detail::lock_release_request(key_, value_);
  }

  // The waiter as its queue and its lease store it (WaitTicket::value()).
  const std::string& value() const noexcept { return value_; }

 private:
  std::string key_;
  std::string queue_;
  std::string tickets_;
  std::optional<std::string> fence_key_;
  std::chrono::milliseconds ttl_;
  std::chrono::milliseconds ticket_ttl_;
  LeaseId id_;
  std::string value_;
};

// Leaves the queue of a name (a waiter that gives up); a query yielding true if the ticket was
// queued there. Retry-safe.
template <class L>
class LeaveQueue {
 public:
  using result_type = bool;
  using effect = Write<L>;

  LeaveQueue(std::string_view lock_key, const WaitTicket& ticket)
      : key_(lock_key),
        queue_(detail::queue_key(lock_key)),
        tickets_(detail::tickets_key(lock_key)),
        channel_(detail::released_channel(lock_key)),
        value_(ticket.value()) {}

  Request request() const {
    const std::string_view keys[] = {queue_, tickets_, key_};
    const std::string_view args[] = {value_, channel_};
    return Request::script(detail::leave_queue_script(), keys, args).retry_safe();
  }
  Result<bool> parse(const Reply& reply, const Timing&) const { return detail::one_or_zero(reply); }

 private:
  std::string key_;
  std::string queue_;
  std::string tickets_;
  std::string channel_;
  std::string value_;
};

template <LockNameType N>
TryLockInTurn<Lock<N>> try_lock_in_turn(const Lock<N>& lock, const N& name,
                                        const WaitTicket& ticket) {
  return TryLockInTurn<Lock<N>>(
      lock.key(name), lock.ttl(),
      lock.fencing() ? std::optional<std::string>(lock.fence_key(name)) : std::nullopt, ticket);
}

template <LockNameType N>
LeaveQueue<Lock<N>> leave_queue(const Lock<N>& lock, const N& name, const WaitTicket& ticket) {
  return LeaveQueue<Lock<N>>(lock.key(name), ticket);
}

}  // namespace leasehold
