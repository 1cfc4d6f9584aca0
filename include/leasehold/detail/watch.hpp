// The watchers behind every Watch (watch.hpp): the keys of a watched name, what its scripts
// reply, how an Observed starts its watch, and the mailbox a Watch takes the changes from.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "leasehold/clock.hpp"
#include "leasehold/detail/describe.hpp"
#include "leasehold/detail/unique_function.hpp"
#include "leasehold/lease_info.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"

namespace leasehold {

class Client;
struct WatchOptions;  // watch.hpp

namespace detail {

// A lock-like name's state as its observers see it (src/lease/scripts/observed.lua).
struct SeenLease {
  std::string lease;  // the lease's value (its id and holder); empty: no lease holds the name
  std::chrono::milliseconds time_left{0};  // by the server's clock, when it was seen
  std::uint64_t term = 0;                  // the term or fence counter's value
  std::optional<std::string> proclaimed;   // an Election's leader's value for this term

  // Whether `other` is the same state, the time left aside.
  bool same_as(const SeenLease& other) const noexcept {
    return lease == other.lease && term == other.term && proclaimed == other.proclaimed;
  }
};

// A state, with the version it was announced under (it only grows).
struct Announced {
  std::uint64_t version = 0;
  SeenLease state;
};

// What an observer's look found: the state, and whether this observer is a looker (one of the
// two that look when the holder's lease would run out).
struct Look {
  Announced seen;
  bool looker = false;
};

// The keys of a watched name, derived from its lease key.
struct WatchTarget {
  std::string key;
  std::optional<std::string> counter;    // the term or fence counter (none: an unfenced Lock)
  std::optional<std::string> value_key;  // an Election's proclaimed value
  // Whether every change of the name announces itself (an Election's scripts do), or the key
  // itself is watched (a Lock's: anyone may SET it; by the server's tracking of keys).
  bool announced = true;
  // A kind of several leases (RwLock, Semaphore): its leases' keys, whose changes are tracked,
  // and the status read that looks at them (key, counter and value_key unused).
  StatusKeys described;
};

// A Lock's state as a Watch reads it (lock.hpp).
std::optional<LeaseInfo> lock_lease_seen(const SeenLease& seen);

// observe.lua: the look of the observer `id`.
Request observe_request(const WatchTarget& target, std::string_view id,
                        std::chrono::milliseconds ticket_ttl);
Result<Look> parse_look(const Reply& reply);
// observe_keep.lua: a renewal without a look; yields whether to look now.
Request observe_keep_request(const WatchTarget& target, std::string_view id,
                             std::chrono::milliseconds ticket_ttl);
Result<bool> parse_keep(const Reply& reply);
// observe_leave.lua.
Request observe_leave_request(const WatchTarget& target, std::string_view id);
// A message on the change channel as the state it announces; none if it is not one.
std::optional<Announced> parse_announcement(std::string_view payload);

// Throws Error (errc::invalid_argument) for options that cannot work.
void validate(const WatchOptions& options);
// Throws the Error that ended a watch; operation_aborted, the code of a cancelled take.
[[noreturn]] void throw_watch_error(std::error_code error, const std::string& detail);
std::error_code aborted() noexcept;

// A watch in progress, on its client's strand. cancel() (from any thread) ends it: it stops
// observing, and tells its sink nothing more.
class WatchHandle {
 public:
  virtual ~WatchHandle() = default;
  virtual void start() = 0;
  virtual void cancel() = 0;
};

// Told, on the client's strand, each state that differs from the last it was told (the first at
// once), or, once, the error that ended the watch (`state` null).
template <class State>
using StateSink =
    UniqueFunction<void(std::error_code, const std::string& detail, const State* state)>;
using WatchSink = StateSink<SeenLease>;
// A lock-like name's watch (watcher.cpp).
std::shared_ptr<WatchHandle> make_watch(Client& client, WatchTarget target,
                                        const WatchOptions& options, WatchSink sink);
// A watch of every lease of a name, target.described's (described_watcher.cpp).
std::shared_ptr<WatchHandle> make_described_watch(Client& client, WatchTarget target,
                                                  const WatchOptions& options,
                                                  StateSink<std::vector<LeaseInfo>> sink);

// How an Observed starts its watch: a lock-like name's, its states read as `State` by `Read`.
template <class State, State (*Read)(const SeenLease&)>
std::shared_ptr<WatchHandle> start_lease_watch(Client& client, WatchTarget target,
                                               const WatchOptions& options, StateSink<State> sink) {
  return make_watch(client, std::move(target), options,
                    [sink = std::move(sink)](std::error_code error, const std::string& detail,
                                             const SeenLease* seen) mutable {
                      if (!seen)
                        return sink(error, detail, nullptr);
                      const State state = Read(*seen);
                      sink(error, detail, &state);
                    });
}

// The states a Watch has not taken yet, between the client's strand (put) and its takers.
template <class State>
class WatchMailbox {
 public:
  using Taker = UniqueFunction<void(std::error_code, std::optional<State>)>;

  void put(std::error_code error, const std::string& detail, const State* state) {
    Taker taker;
    std::optional<State> next;
    {
      const std::lock_guard lock(mutex_);
      if (closed_ || error_)
        return;
      if (state)
        states_.push_back(*state);
      else
        error_ = error, detail_ = detail;
      changed_.notify_all();
      if (!taker_)
        return;
      taker = std::move(taker_);
      taker_ = {};
      if (state) {
        next = std::move(states_.front());
        states_.pop_front();
      }
    }
    taker(state ? std::error_code() : error, std::move(next));
  }

  // The next state: none at `deadline`, when `stop` is requested or the watch is closed; throws
  // the error that ended the watch.
  std::optional<State> take(Clock::time_point deadline, std::stop_token stop) {
    const std::stop_callback on_stop(stop, [this] {
      const std::lock_guard stopping(mutex_);
      changed_.notify_all();
    });
    std::unique_lock lock(mutex_);
    const auto ready = [&] {
      return !states_.empty() || error_ || closed_ || stop.stop_requested();
    };
    if (deadline == Clock::time_point::max())
      changed_.wait(lock, ready);
    else
      changed_.wait_until(lock, deadline, ready);
    if (!states_.empty() && !closed_) {
      State next = std::move(states_.front());
      states_.pop_front();
      return next;
    }
    if (error_ && !closed_)
      throw_watch_error(error_, detail_);
    return std::nullopt;
  }

  // Calls `taker` with the next state as soon as there is one (at once if there is), with the
  // error that ended the watch, or with operation_aborted when closed or cancel_taker() is
  // called. One taker at a time.
  void take_async(Taker taker) {
    std::unique_lock lock(mutex_);
    if (!states_.empty() && !closed_) {
      std::optional<State> next = std::move(states_.front());
      states_.pop_front();
      lock.unlock();
      taker(std::error_code(), std::move(next));
      return;
    }
    if (error_ || closed_) {
      const std::error_code error = closed_ ? aborted() : error_;
      lock.unlock();
      taker(error, std::nullopt);
      return;
    }
    taker_ = std::move(taker);
  }

  void cancel_taker() {
    Taker taker;
    {
      const std::lock_guard lock(mutex_);
      taker = std::move(taker_);
      taker_ = {};
    }
    if (taker)
      taker(aborted(), std::nullopt);
  }

  void close() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
      changed_.notify_all();
    }
    cancel_taker();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<State> states_;
  std::error_code error_;
  std::string detail_;
  bool closed_ = false;
  Taker taker_;
};

// A callback that can be closed: after close() returns, no call is running or starts (a close
// from within the call itself only stops the later ones).
template <class... Args>
class ClosableCallback {
 public:
  explicit ClosableCallback(UniqueFunction<void(Args...)> callback)
      : callback_(std::move(callback)) {}

  void operator()(Args... args) {
    const std::lock_guard lock(mutex_);
    if (!open_)
      return;
    calling_.store(std::this_thread::get_id());
    callback_(std::forward<Args>(args)...);
    calling_.store(std::thread::id());
  }
  void close() {
    if (calling_.load() == std::this_thread::get_id()) {
      open_ = false;  // within the call: the mutex is this thread's
      return;
    }
    const std::lock_guard lock(mutex_);
    open_ = false;
  }

 private:
  std::mutex mutex_;
  std::atomic<std::thread::id> calling_{};
  bool open_ = true;
  UniqueFunction<void(Args...)> callback_;
};

struct WatchAccess;

}  // namespace detail
}  // namespace leasehold
