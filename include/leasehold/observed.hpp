// Observed<State>: a name to watch, as a value that a kind makes (Election::observe(),
// Lock::observe()) and a Watch runs (watch.hpp).
#pragma once

#include <utility>

#include "leasehold/detail/watch.hpp"

namespace leasehold {

template <class State>
class Watch;

// A name to watch, as a value: Election::observe() and Lock::observe() make one. `State` is what
// a change reads as (an Election's: std::optional<Leader>; a Lock's: std::optional<LeaseInfo>).
template <class State>
class Observed {
 public:
  using state_type = State;

 private:
  friend struct detail::WatchAccess;
  template <class>
  friend class Watch;
  using Read = State (*)(const detail::SeenLease&);
  Observed(detail::WatchTarget target, Read read) : target_(std::move(target)), read_(read) {}

  detail::WatchTarget target_;
  Read read_;
};

namespace detail {
struct WatchAccess {
  template <class State>
  static Observed<State> make(WatchTarget target, State (*read)(const SeenLease&)) {
    return Observed<State>(std::move(target), read);
  }
};
}  // namespace detail

}  // namespace leasehold
