// When a waiter refused at `now` tries again, from what its try found: no timers, no I/O.
// TurnWaiter (wait.cpp) sets its timer by it; a release that names the waiter, or a new
// subscription, wakes it sooner.
#pragma once

#include <algorithm>
#include <chrono>

#include "leasehold/clock.hpp"
#include "leasehold/detail/turn.hpp"

namespace leasehold::detail {

// The head tries when the holder's lease runs out (a crashed holder tells no one); the one
// behind it then too (the head may have died with it), and when the head's ticket runs out (the
// grace its turn had, or the head died), as does any waiter that found the lease free for the
// waiters ahead; everyone at least every `recheck`; no one after the deadline. A margin puts a try
// after the expiry at Redis, which counted the TTL before the reply left. The TTLs are the server's
// word: only one shorter than the recheck is added to `now` (a key another client gave centuries
// would overflow the clock).
inline Clock::time_point next_turn_try(const TurnSeen& seen, Clock::time_point now,
                                       std::chrono::milliseconds recheck,
                                       Clock::time_point deadline) {
  constexpr std::chrono::milliseconds kMargin{1};
  const auto sooner = [&](std::chrono::milliseconds ttl) {
    return ttl > std::chrono::milliseconds::zero() && ttl < recheck;
  };
  Clock::time_point at = now + recheck;
  if ((seen.position == 1 || seen.position == 2) && sooner(seen.holder_ttl))
    at = now + seen.holder_ttl + kMargin;
  const bool free_ahead = seen.holder_ttl == std::chrono::milliseconds::zero();
  if ((seen.position == 2 || (free_ahead && seen.position > 2)) && sooner(seen.head_ticket_ttl))
    at = std::min(at, now + seen.head_ticket_ttl + kMargin);
  return std::min(at, deadline);
}

}  // namespace leasehold::detail
