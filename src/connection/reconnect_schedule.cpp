#include "reconnect_schedule.hpp"

#include <algorithm>
#include <utility>

namespace leasehold::detail {

ReconnectSchedule::ReconnectSchedule(std::chrono::milliseconds delay_min,
                                     std::chrono::milliseconds delay_max, std::uint32_t seed)
    : delay_min_(delay_min), delay_max_(delay_max), delay_(delay_min), jitter_(seed) {}

bool ReconnectSchedule::on_connected() {
  delay_ = delay_min_;
  return !std::exchange(connected_before_, true);
}

std::chrono::milliseconds ReconnectSchedule::on_lost() {
  return take_delay();
}

std::optional<std::chrono::milliseconds> ReconnectSchedule::on_attempt_failed(
    const Failure& failure) {
  if (failure.error == condition::fatal)
    return std::nullopt;
  return take_delay();
}

std::chrono::milliseconds ReconnectSchedule::take_delay() {
  const std::chrono::milliseconds now = delay_;
  // Double, capped, with up to 25% jitter.
  const auto doubled = std::min(delay_ * 2, delay_max_);
  const auto spread = std::max<std::int64_t>(1, doubled.count() / 4);
  delay_ = doubled - std::chrono::milliseconds(static_cast<std::int64_t>(jitter_() % spread));
  return now;
}

}  // namespace leasehold::detail
