// Telling a client's observer of an event, whoever raises it: a throwing observer is not the
// lease's failure.
#pragma once

#include "leasehold/observer.hpp"

namespace leasehold::detail {

// Calls `event` on `observer` if there is one, dropping whatever it throws.
template <class Event>
void tell(Observer* observer, void (Observer::*method)(const Event&), const Event& event) noexcept {
  if (observer == nullptr)
    return;
  try {
    (observer->*method)(event);
  } catch (...) {
    // An observer's failure is not the lease's.
  }
}

}  // namespace leasehold::detail
