// A Semaphore's machinery: its lease kind, its scripts and requests, its turn contract.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/detail/fence_counters.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/error.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

class TurnContract;  // detail/turn.hpp

const Script& permit_acquire_script();
Request permit_force_release_request(std::string_view holders_key, std::string_view count_key);

// A permit: its id's member of the holders' sorted set (scored by the end of its lease, in
// server ms); its second key is the name's count key (extend keeps its expiry). Its release
// tells the head of the name's queue.
extern const LeaseKind kPermitLease;

// The keys of a Semaphore's name, and its fence counters when fenced.
struct PermitKeys {
  std::string holders;
  std::string count;
  std::optional<FenceCounters> fence;
};
// A Semaphore's turn contract: the first waiters of its queue get the free permits
// (permit_in_turn.lua).
std::shared_ptr<const TurnContract> permit_turn(PermitKeys keys, std::chrono::milliseconds ttl,
                                                std::uint32_t permits);

constexpr void validate_permits(std::uint32_t permits) {
  if (permits == 0)
    throw Error(make_error_code(errc::invalid_argument), "a semaphore needs at least one permit");
}

}  // namespace leasehold::detail
