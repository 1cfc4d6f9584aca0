// An RwLock's machinery: its two lease kinds, its scripts and requests, its turn contract, and
// what its two acquires share.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "leasehold/detail/fence_counters.hpp"
#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/detail/report.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/query.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

class TurnContract;  // detail/turn.hpp

const Script& rw_try_read_script();
const Script& rw_try_write_script();

// The two kinds of lease an RwLock grants. Both have the writer key as their key and the readers'
// sorted set as their second key: a writer's lease is the writer key holding its id, a reader's
// is its id's member of the sorted set.
// A release tells the waiters whose turn it is then (src/lease/scripts/rw_notify_turns.lua).
extern const LeaseKind kRwWriterLease;
extern const LeaseKind kRwReaderLease;

// The operator's release of whoever holds a name.
Request rw_force_release_request(std::string_view writer_key, std::string_view readers_key,
                                 std::string_view intent_key);
// The release (no ttl) or the extend (for `extend_ttl`) of the writer's or a reader's lease
// whose id is `id`, found by the script.
Request rw_by_id_request(std::string_view writer_key, std::string_view readers_key,
                         const LeaseId& id, std::optional<std::chrono::milliseconds> extend_ttl);

// The keys of an RwLock's name, and its writers' fence counters when fenced.
struct RwKeys {
  std::string writer;
  std::string readers;
  std::string intent;
  std::optional<FenceCounters> fence;
};
// An RwLock's turn contract for a reader (writer: false) or the writer: one queue for both, in
// which readers queued together get in together (rw_in_turn.lua).
std::shared_ptr<const TurnContract> rw_turn(RwKeys keys, std::chrono::milliseconds ttl,
                                            bool writer);

// What TryRead and TryWrite share: the three keys, a fresh id, the acquire script's reply.
template <class Token>
class RwAcquire {
 public:
  using result_type = std::optional<Token>;

  RwAcquire(std::string writer_key, std::string readers_key, std::string intent_key,
            std::chrono::milliseconds ttl, const LeaseKind& kind,
            std::optional<FenceCounters> fence = std::nullopt)
      : writer_key_(std::move(writer_key)),
        readers_key_(std::move(readers_key)),
        intent_key_(std::move(intent_key)),
        fence_(std::move(fence)),
        ttl_(ttl),
        kind_(&kind),
        id_(LeaseId::generate()),
        value_(id_.hex() + holder_suffix()) {}

  const LeaseId& id() const noexcept { return id_; }

  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    if (reply.is_error())
      return error_result<result_type>(reply);
    if (reply.type != Reply::Type::integer)
      return Result<result_type>(make_error_code(errc::unexpected_reply), to_string(reply));
    if (reply.integer <= 0)
      return result_type{};
    const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
    if (timing.received >= deadline)
      return granted_too_late<result_type>();
    auto state =
        std::make_shared<LeaseState>(writer_key_, id_, ttl_, deadline, kind_, readers_key_, value_);
    // A fenced writer's grant answers its fencing number, others 1.
    if (fence_)
      state->fence = static_cast<std::uint64_t>(reply.integer);
    return result_type{TokenAccess::make<Token>(std::move(state))};
  }

  // The acquire may have run: release this id (best effort).
  std::optional<Request> on_unknown_outcome() const {
    const LeaseState state(writer_key_, id_, ttl_, Clock::time_point{}, kind_, readers_key_,
                           value_);
    return lease_request(state, false);
  }

  void report(Observer& observer, const Result<result_type>& outcome,
              const Timing& timing) const noexcept {
    report_try(observer, writer_key_, outcome, timing);
  }

 protected:
  Request script_request(const Script& script, std::string_view intent_ttl) const {
    const DecimalDigits ttl(ttl_.count());
    const std::string_view keys[] = {writer_key_, readers_key_, intent_key_,
                                     fence_ ? std::string_view(fence_->slot) : std::string_view(),
                                     fence_ ? std::string_view(fence_->own) : std::string_view()};
    const std::string_view with_intent[] = {value_, ttl.view(), intent_ttl};
    const std::span<const std::string_view> args(with_intent, intent_ttl.empty() ? 2 : 3);
    // Retry-safe: a rerun with the same id answers 1 again (and keeps one lease).
    const std::span<const std::string_view> used_keys(keys, fence_ ? 5 : 3);
    return fenced_script(script, used_keys, args, fence_).retry_safe().grants_lease();
  }

 private:
  std::string writer_key_;
  std::string readers_key_;
  std::string intent_key_;
  std::optional<FenceCounters> fence_;  // a fenced writer's
  std::chrono::milliseconds ttl_;
  const LeaseKind* kind_;
  LeaseId id_;
  std::string value_;  // the id and its holder, as stored
};

}  // namespace leasehold::detail
