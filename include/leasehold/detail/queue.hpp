// A Lock's queue of waiters: its turn contract and leaving the queue (queue.hpp).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/detail/fence_counters.hpp"
#include "leasehold/detail/keys.hpp"
#include "leasehold/detail/turn.hpp"
#include "leasehold/request.hpp"

namespace leasehold {

struct WaitTicket;  // queue.hpp

namespace detail {

// The waiter a ticket stands for.
Waiter waiter_of(const WaitTicket& ticket);

// A Lock's turn contract: its queue, and its in-turn script (lock_in_turn.lua), which marks a
// held key with the head waiter so that the release tells it.
class LockTurn final : public TurnContract {
 public:
  // `value_key`: an Election's proclaimed value, announced to its observers with its leader; its
  // leases are an Election's (their release tells the observers).
  LockTurn(std::string key, std::chrono::milliseconds ttl, std::optional<FenceCounters> fence,
           std::optional<std::string> value_key = std::nullopt);

  const std::string& key() const noexcept override { return key_; }
  bool queued() const noexcept override { return true; }
  Request try_request(const Waiter& waiter) const override;
  Result<TurnOutcome> parse_try(const Reply& reply, const Timing& timing,
                                const Waiter& waiter) const override;
  std::optional<Request> keep_place_request(
      const Waiter& waiter, std::chrono::system_clock::time_point until) const override;
  Request release_request(const Waiter& waiter) const override;
  std::optional<Request> leave_request(const Waiter& waiter) const override;

 private:
  bool observable() const noexcept { return value_key_.has_value(); }

  std::string key_;
  WaitKeys waiting_;
  std::string observed_;
  std::string changed_;
  std::optional<FenceCounters> fence_;
  std::optional<std::string> value_key_;
  std::chrono::milliseconds ttl_;
};

// A Lock's waiter gives up its place (lock_leave_queue.lua).
Request lock_leave_request(std::string_view lock_key, const WaitKeys& waiting,
                           std::string_view value);

}  // namespace detail
}  // namespace leasehold
