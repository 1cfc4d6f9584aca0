// Observed<State>: a name to watch, as a value that a kind makes (Election::observe(),
// Lock::observe(), RwLock::observe(), Semaphore::observe()) and a Watch runs (watch.hpp).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "leasehold/detail/watch.hpp"

namespace leasehold {

class Client;
struct WatchOptions;
template <class State>
class Watch;

// A name to watch, as a value: a kind's observe() makes one. `State` is what a change reads as
// (an Election's: std::optional<Leader>; a Lock's: std::optional<LeaseInfo>; an RwLock's or a
// Semaphore's: std::vector<LeaseInfo>).
template <class State>
class Observed {
 public:
  using state_type = State;

 private:
  friend struct detail::WatchAccess;
  template <class>
  friend class Watch;
  using Start = std::shared_ptr<detail::WatchHandle> (*)(Client&, detail::WatchTarget,
                                                         const WatchOptions&,
                                                         detail::StateSink<State>);
  Observed(detail::WatchTarget target, Start start) : target_(std::move(target)), start_(start) {}

  detail::WatchTarget target_;
  Start start_;
};

namespace detail {
struct WatchAccess {
  // A lock-like name (a Lock's, an Election's), its states read by `Read`.
  template <class State, State (*Read)(const SeenLease&)>
  static Observed<State> lease(WatchTarget target) {
    return Observed<State>(std::move(target), &start_lease_watch<State, Read>);
  }
  // Every lease of a name (an RwLock's, a Semaphore's), target.described's.
  static Observed<std::vector<LeaseInfo>> described(WatchTarget target) {
    return Observed<std::vector<LeaseInfo>>(std::move(target), &make_described_watch);
  }
};
}  // namespace detail

}  // namespace leasehold
