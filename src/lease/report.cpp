#include "leasehold/detail/report.hpp"

#include <asio/error.hpp>

#include "tell_observer.hpp"

namespace leasehold::detail {

void report_acquire(Observer& observer, std::string_view key, bool granted, std::error_code error,
                    const Timing& timing) noexcept {
  using Outcome = AcquireEvent::Outcome;
  const Outcome outcome = granted                                   ? Outcome::acquired
                          : error == asio::error::operation_aborted ? Outcome::cancelled
                          : error                                   ? Outcome::failed
                                                                    : Outcome::busy;
  tell(&observer, &Observer::on_acquire, AcquireEvent{key, outcome, timing.received - timing.sent});
}

void report_release(Observer& observer, const LeaseState& lease, bool released,
                    std::error_code error, const Timing& timing) noexcept {
  using Outcome = ReleaseEvent::Outcome;
  const Outcome outcome = error ? Outcome::failed : released ? Outcome::released : Outcome::lost;
  tell(&observer, &Observer::on_release,
       ReleaseEvent{lease.key, outcome, timing.received - lease.granted_at});
}

void report_extension(Observer& observer, const LeaseState& lease,
                      Clock::time_point deadline_before, bool extended, std::error_code error,
                      const Timing& timing) noexcept {
  using Outcome = ExtensionEvent::Outcome;
  const Outcome outcome = error ? Outcome::failed : extended ? Outcome::extended : Outcome::refused;
  tell(&observer, &Observer::on_extension,
       ExtensionEvent{lease.key, outcome, deadline_before - timing.sent});
}

}  // namespace leasehold::detail
