#include "leasehold/raw_lock.hpp"

#include "leasehold/detail/turn.hpp"

namespace leasehold::detail {
namespace {

class RawTurn final : public TurnContract {
 public:
  RawTurn(std::string key, std::chrono::milliseconds ttl) : key_(std::move(key)), ttl_(ttl) {}

  const std::string& key() const noexcept override { return key_; }
  bool queued() const noexcept override { return false; }

  // What other clients would not understand is not stored: the bare id, the same at every try
  // (so that a retry finds its own lease).
  Request try_request(const Waiter& waiter) const override {
    const std::string id = waiter.id.hex();
    const DecimalDigits ttl(ttl_.count());
    return Request::command({"SET", key_, id, "NX", "PX", ttl.view(), "GET"})
        .for_key(key_)
        .retry_safe()
        .grants_lease();
  }

  std::optional<Request> keep_place_request(const Waiter&,
                                            std::chrono::system_clock::time_point) const override {
    return std::nullopt;
  }

  // nil: the key was free and is this waiter's now; its own id: a retry found its lease.
  Result<TurnOutcome> parse_try(const Reply& reply, const Timing& timing,
                                const Waiter& waiter) const override {
    if (reply.is_error())
      return error_result<TurnOutcome>(reply);
    const std::string id = waiter.id.hex();
    if (!reply.is_nil()) {
      if (reply.type != Reply::Type::string)
        return Result<TurnOutcome>(make_error_code(errc::unexpected_reply), to_string(reply));
      if (reply.str != id)
        return TurnOutcome{};  // another client holds it
    }
    const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
    if (timing.received >= deadline)
      return granted_too_late<TurnOutcome>();
    return TurnOutcome{std::make_shared<LeaseState>(key_, waiter.id, ttl_, deadline, &kLockLease,
                                                    std::string(), id),
                       {}};
  }

  Request release_request(const Waiter& waiter) const override {
    return lock_release_request(key_, waiter.id.hex());
  }

  std::optional<Request> leave_request(const Waiter&) const override { return std::nullopt; }

 private:
  std::string key_;
  std::chrono::milliseconds ttl_;
};

}  // namespace

std::shared_ptr<const TurnContract> raw_turn(std::string key, std::chrono::milliseconds ttl) {
  return std::make_shared<RawTurn>(std::move(key), ttl);
}

}  // namespace leasehold::detail
