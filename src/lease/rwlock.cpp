// The RwLock's scripts: src/lease/scripts/rw_*.lua, each with its contract.
#include "leasehold/rwlock.hpp"

#include "lease_scripts.hpp"
#include "leasehold/detail/turn.hpp"
#include "scripts.hpp"

namespace leasehold::detail {

const Script& rw_try_read_script() {
  static const Script script{std::string(lua::rw_try_read)};
  return script;
}

const Script& rw_try_write_script() {
  static const Script script{std::string(lua::rw_try_write)};
  return script;
}

const Script& rw_write_release_script() {
  static const Script script{std::string(lua::rw_write_release)};
  return script;
}

const Script& rw_write_extend_script() {
  static const Script script{std::string(lua::rw_write_extend)};
  return script;
}

const Script& rw_read_release_script() {
  static const Script script{std::string(lua::rw_read_release)};
  return script;
}

Request rw_release_request(const LeaseState& state) {
  const WaitKeys waiting(state.key);
  const std::string_view keys[] = {state.key, state.second_key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {state.value, waiting.channel};
  return Request::script(state.kind->release(), keys, args);
}

const LeaseKind kRwWriterLease{rw_write_release_script, rw_write_extend_script, rw_release_request};
const LeaseKind kRwReaderLease{rw_read_release_script, rw_read_extend_script, rw_release_request,
                               LeaseKind::HeldAt::second_key_member};

const Script& rw_in_turn_script() {
  static const Script script{std::string(lua::rw_in_turn)};
  return script;
}

const Script& rw_leave_queue_script() {
  static const Script script{std::string(lua::rw_leave_queue)};
  return script;
}

const Script& rw_force_release_script() {
  static const Script script{std::string(lua::rw_force_release)};
  return script;
}

Request rw_force_release_request(std::string_view writer_key, std::string_view readers_key,
                                 std::string_view intent_key) {
  const WaitKeys waiting(writer_key);
  const std::string_view keys[] = {writer_key, readers_key, intent_key, waiting.queue,
                                   waiting.tickets};
  const std::string_view args[] = {waiting.channel};
  return Request::script(rw_force_release_script(), keys, args).retry_safe();
}

const Script& rw_by_id_script() {
  static const Script script{std::string(lua::rw_by_id)};
  return script;
}

Request rw_by_id_request(std::string_view writer_key, std::string_view readers_key,
                         const LeaseId& id, std::optional<std::chrono::milliseconds> extend_ttl) {
  const WaitKeys waiting(writer_key);
  const std::string id_hex = id.hex();
  const DecimalDigits ttl(extend_ttl ? extend_ttl->count() : 0);
  const std::string_view keys[] = {writer_key, readers_key, waiting.queue, waiting.tickets};
  const std::string_view args[] = {id_hex, extend_ttl ? ttl.view() : "release", waiting.channel};
  Request request = Request::script(rw_by_id_script(), keys, args);
  if (extend_ttl)
    return std::move(request).retry_safe().grants_lease();
  return request;
}

const Script& rw_read_extend_script() {
  static const Script script{std::string(lua::rw_read_extend)};
  return script;
}

namespace {

// Queue members are "<kind>:<value>", kind 'r' or 'w'.
class RwTurn final : public TurnContract {
 public:
  RwTurn(RwKeys keys, std::chrono::milliseconds ttl, bool writer)
      : keys_(std::move(keys)), waiting_(keys_.writer), ttl_(ttl), writer_(writer) {}

  const std::string& key() const noexcept override { return keys_.writer; }
  bool queued() const noexcept override { return true; }

  Request try_request(const Waiter& waiter) const override {
    const DecimalDigits ttl(ttl_.count());
    const DecimalDigits ticket_ttl(waiter.ticket_ttl.count());
    const DecimalDigits grace(waiter.grace.count());
    const std::string_view args[] = {writer_ ? "w" : "r", waiter.value, ttl.view(),
                                     ticket_ttl.view(),   grace.view(), waiting_.channel};
    // Both arms are views: a std::string arm would make a temporary the view outlives.
    const std::string_view fence =
        fenced() ? std::string_view(keys_.fence->slot) : std::string_view();
    const std::string_view own = fenced() ? std::string_view(keys_.fence->own) : std::string_view();
    const std::string_view keys[] = {keys_.writer,     keys_.readers, keys_.intent, waiting_.queue,
                                     waiting_.tickets, fence,         own};
    return fenced_script(rw_in_turn_script(), std::span(keys, fenced() ? 7 : 5), args, keys_.fence)
        .retry_safe()
        .grants_lease();
  }

  Result<TurnOutcome> parse_try(const Reply& reply, const Timing& timing,
                                const Waiter& waiter) const override {
    return turn_outcome(reply, timing, waiter,
                        {keys_.writer, keys_.readers, &kind(), ttl_, fenced()});
  }

  std::optional<Request> keep_place_request(
      const Waiter& waiter, std::chrono::system_clock::time_point until) const override {
    static const Script script{std::string(lua::rw_keep_place)};
    const DecimalDigits at = place_until_ms(until);
    const std::string queued = member(waiter);
    const std::string_view keys[] = {keys_.writer, keys_.readers, keys_.intent, waiting_.tickets};
    const std::string_view args[] = {queued, at.view()};
    return Request::script(script, keys, args).retry_safe();
  }

  Request release_request(const Waiter& waiter) const override {
    const LeaseState state(keys_.writer, waiter.id, ttl_, Clock::time_point{}, &kind(),
                           keys_.readers, waiter.value);
    return lease_request(state, false);
  }

  std::optional<Request> leave_request(const Waiter& waiter) const override {
    const std::string queued = member(waiter);
    const std::string_view keys[] = {keys_.writer, keys_.readers, keys_.intent, waiting_.queue,
                                     waiting_.tickets};
    const std::string_view args[] = {queued, waiting_.channel};
    return Request::script(rw_leave_queue_script(), keys, args).retry_safe();
  }

 private:
  std::string member(const Waiter& waiter) const {
    return std::string(writer_ ? "w:" : "r:") + waiter.value;
  }
  // Readers are never fenced.
  bool fenced() const noexcept { return writer_ && keys_.fence.has_value(); }
  const LeaseKind& kind() const noexcept { return writer_ ? kRwWriterLease : kRwReaderLease; }

  RwKeys keys_;
  WaitKeys waiting_;
  std::chrono::milliseconds ttl_;
  bool writer_;
};

}  // namespace

std::shared_ptr<const TurnContract> rw_turn(RwKeys keys, std::chrono::milliseconds ttl,
                                            bool writer) {
  return std::make_shared<RwTurn>(std::move(keys), ttl, writer);
}

}  // namespace leasehold::detail
