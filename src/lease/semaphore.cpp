// The Semaphore's scripts: src/lease/scripts/permit_*.lua, each with its contract.
#include "leasehold/semaphore.hpp"

#include "lease_scripts.hpp"
#include "leasehold/detail/turn.hpp"
#include "scripts.hpp"

namespace leasehold::detail {

const Script& permit_acquire_script() {
  static const Script script{std::string(lua::permit_acquire)};
  return script;
}

const Script& permit_release_script() {
  static const Script script{std::string(lua::permit_release)};
  return script;
}

const Script& permit_extend_script() {
  static const Script script{std::string(lua::permit_extend)};
  return script;
}

Request permit_release_request(const LeaseState& state) {
  const WaitKeys waiting(state.key);
  const std::string_view keys[] = {state.key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {state.value, waiting.channel};
  return Request::script(permit_release_script(), keys, args);
}

const LeaseKind kPermitLease{permit_release_script, permit_extend_script, permit_release_request,
                             LeaseKind::HeldAt::key_member};

const Script& permit_force_release_script() {
  static const Script script{std::string(lua::permit_force_release)};
  return script;
}

Request permit_force_release_request(std::string_view holders_key, std::string_view count_key) {
  const WaitKeys waiting(holders_key);
  const std::string_view keys[] = {holders_key, count_key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {waiting.channel};
  return Request::script(permit_force_release_script(), keys, args).retry_safe();
}

const Script& permit_in_turn_script() {
  static const Script script{std::string(lua::permit_in_turn)};
  return script;
}

const Script& permit_leave_queue_script() {
  static const Script script{std::string(lua::permit_leave_queue)};
  return script;
}

namespace {

class PermitTurn final : public TurnContract {
 public:
  PermitTurn(PermitKeys keys, std::chrono::milliseconds ttl, std::uint32_t permits)
      : keys_(std::move(keys)), waiting_(keys_.holders), ttl_(ttl), permits_(permits) {}

  const std::string& key() const noexcept override { return keys_.holders; }
  bool queued() const noexcept override { return true; }

  Request try_request(const Waiter& waiter) const override {
    const DecimalDigits ttl(ttl_.count());
    const DecimalDigits ticket_ttl(waiter.ticket_ttl.count());
    const DecimalDigits permits(permits_);
    const DecimalDigits grace(waiter.grace.count());
    const std::string_view args[] = {waiter.value,   ttl.view(),       ticket_ttl.view(),
                                     permits.view(), waiting_.channel, grace.view()};
    const std::string_view keys[] = {keys_.holders,
                                     waiting_.queue,
                                     waiting_.tickets,
                                     keys_.count,
                                     keys_.fence ? std::string_view(keys_.fence->slot) : "",
                                     keys_.fence ? std::string_view(keys_.fence->own) : ""};
    return fenced_script(permit_in_turn_script(), std::span(keys, keys_.fence ? 6 : 4), args,
                         keys_.fence)
        .retry_safe()
        .grants_lease();
  }

  Result<TurnOutcome> parse_try(const Reply& reply, const Timing& timing,
                                const Waiter& waiter) const override {
    return turn_outcome(reply, timing, waiter,
                        {keys_.holders, keys_.count, &kPermitLease, ttl_, keys_.fence.has_value()});
  }

  std::optional<Request> keep_place_request(
      const Waiter& waiter, std::chrono::system_clock::time_point until) const override {
    static const Script script{std::string(lua::permit_keep_place)};
    const DecimalDigits at = place_until_ms(until);
    const DecimalDigits permits(permits_);
    const std::string_view keys[] = {keys_.holders, waiting_.tickets};
    const std::string_view args[] = {waiter.value, at.view(), permits.view()};
    return Request::script(script, keys, args).retry_safe();
  }

  Request release_request(const Waiter& waiter) const override {
    const LeaseState state(keys_.holders, waiter.id, ttl_, Clock::time_point{}, &kPermitLease,
                           keys_.count, waiter.value);
    return lease_request(state, false);
  }

  std::optional<Request> leave_request(const Waiter& waiter) const override {
    const std::string_view keys[] = {keys_.holders, waiting_.queue, waiting_.tickets};
    const std::string_view args[] = {waiter.value, waiting_.channel};
    return Request::script(permit_leave_queue_script(), keys, args).retry_safe();
  }

 private:
  PermitKeys keys_;
  WaitKeys waiting_;
  std::chrono::milliseconds ttl_;
  std::uint32_t permits_;
};

}  // namespace

std::shared_ptr<const TurnContract> permit_turn(PermitKeys keys, std::chrono::milliseconds ttl,
                                                std::uint32_t permits) {
  return std::make_shared<PermitTurn>(std::move(keys), ttl, permits);
}

}  // namespace leasehold::detail
