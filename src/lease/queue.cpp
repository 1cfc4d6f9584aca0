#include "leasehold/queue.hpp"

#include "lease_scripts.hpp"
#include "leasehold/detail/election.hpp"
#include "scripts.hpp"

namespace leasehold::detail {

Waiter waiter_of(const WaitTicket& ticket) {
  return Waiter{ticket.id, ticket.ttl, ticket.grace, ticket.value()};
}

// The scripts' contracts are in src/lease/scripts/.

const Script& lock_in_turn_script() {
  static const Script script{std::string(lua::lock_in_turn)};
  return script;
}

const Script& lock_keep_place_script() {
  static const Script script{std::string(lua::lock_keep_place)};
  return script;
}

const Script& leave_queue_script() {
  static const Script script{std::string(lua::lock_leave_queue)};
  return script;
}

LockTurn::LockTurn(std::string key, std::chrono::milliseconds ttl,
                   std::optional<FenceCounters> fence, std::optional<std::string> value_key)
    : key_(std::move(key)),
      waiting_(key_),
      observed_(observed_key(key_)),
      changed_(changed_channel(key_)),
      fence_(std::move(fence)),
      value_key_(std::move(value_key)),
      ttl_(ttl) {}

Request LockTurn::try_request(const Waiter& waiter) const {
  const DecimalDigits ttl(ttl_.count());
  const DecimalDigits ticket_ttl(waiter.ticket_ttl.count());
  const DecimalDigits grace(waiter.grace.count());
  const std::string_view args[] = {waiter.value, ttl.view(),       ticket_ttl.view(),
                                   grace.view(), waiting_.channel, changed_};
  const std::span<const std::string_view> used_args(args, observable() ? 6 : 5);
  // KEYS[6] is an Election's value key, or a fenced Lock's own counter.
  std::string_view sixth;
  if (value_key_)
    sixth = *value_key_;
  else if (fence_)
    sixth = fence_->own;
  const std::string_view keys[] = {key_,
                                   waiting_.queue,
                                   waiting_.tickets,
                                   observed_,
                                   fence_ ? std::string_view(fence_->slot) : std::string_view(),
                                   sixth};
  std::size_t used = 4;
  if (fence_)
    used = sixth.empty() ? 5 : 6;
  return fenced_script(lock_in_turn_script(), std::span(keys, used), used_args, fence_)
      .retry_safe()
      .grants_lease();
}

Result<TurnOutcome> LockTurn::parse_try(const Reply& reply, const Timing& timing,
                                        const Waiter& waiter) const {
  static const std::string no_second_key;
  const LeaseKind* kind = observable() ? &kElectionLease : &kLockLease;
  return turn_outcome(reply, timing, waiter, {key_, no_second_key, kind, ttl_, fence_.has_value()});
}

std::optional<Request> LockTurn::keep_place_request(
    const Waiter& waiter, std::chrono::system_clock::time_point until) const {
  const DecimalDigits at = place_until_ms(until);
  const std::string_view keys[] = {key_, waiting_.tickets};
  const std::string_view args[] = {waiter.value, at.view()};
  return Request::script(lock_keep_place_script(), keys, args).retry_safe();
}

DecimalDigits place_until_ms(std::chrono::system_clock::time_point until) {
  return DecimalDigits(
      std::chrono::duration_cast<std::chrono::milliseconds>(until.time_since_epoch()).count());
}

Request LockTurn::release_request(const Waiter& waiter) const {
  return lock_release_request(key_, waiter.value, observable());
}

std::optional<Request> LockTurn::leave_request(const Waiter& waiter) const {
  return lock_leave_request(key_, waiting_, waiter.value);
}

Request lock_leave_request(std::string_view lock_key, const WaitKeys& waiting,
                           std::string_view value) {
  const std::string_view keys[] = {waiting.queue, waiting.tickets, lock_key};
  const std::string_view args[] = {value, waiting.channel};
  return Request::script(leave_queue_script(), keys, args).retry_safe();
}

std::shared_ptr<const TurnContract> lock_turn(std::string key, std::chrono::milliseconds ttl,
                                              std::optional<FenceCounters> fence,
                                              std::optional<std::string> value_key) {
  return std::make_shared<LockTurn>(std::move(key), ttl, std::move(fence), std::move(value_key));
}

Result<TurnOutcome> turn_outcome(const Reply& reply, const Timing& timing, const Waiter& waiter,
                                 const TurnLease& lease) {
  Result<std::vector<long long>> fields = turn_fields(reply);
  if (!fields)
    return Result<TurnOutcome>(fields.error(), fields.detail());
  const std::vector<long long>& f = *fields;
  if (f[0] == 0)
    return TurnOutcome{nullptr,
                       {std::chrono::milliseconds(f[1]), static_cast<std::size_t>(f[2]),
                        std::chrono::milliseconds(f[3])}};
  const Clock::time_point deadline = lease_deadline(timing.sent, lease.ttl);
  if (timing.received >= deadline)
    return granted_too_late<TurnOutcome>();
  auto state = std::make_shared<LeaseState>(lease.key, waiter.id, lease.ttl, deadline, lease.kind,
                                            lease.second_key, waiter.value);
  state->fence = lease.fenced ? static_cast<std::uint64_t>(f[1]) : 0;
  return TurnOutcome{std::move(state), {}};
}

Result<std::vector<long long>> turn_fields(const Reply& reply) {
  if (reply.is_error())
    return error_result<std::vector<long long>>(reply);
  const bool well_formed = reply.type == Reply::Type::array &&
                           (reply.elements.size() == 2 || reply.elements.size() == 4);
  std::vector<long long> fields;
  for (std::size_t i = 0; well_formed && i < reply.elements.size(); ++i) {
    if (reply.elements[i].type != Reply::Type::integer)
      break;
    fields.push_back(reply.elements[i].integer);
  }
  if (!well_formed || fields.size() != reply.elements.size() ||
      (fields[0] == 0) != (fields.size() == 4))
    return Result<std::vector<long long>>(
        make_error_code(errc::unexpected_reply),
        "an unexpected reply to a try in turn: " + to_string(reply));
  return fields;
}

}  // namespace leasehold::detail
