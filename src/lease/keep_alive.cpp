#include "leasehold/keep_alive.hpp"

#include <asio/post.hpp>
#include <mutex>

#include "keep_alive_schedule.hpp"
#include "leasehold/client.hpp"
#include "leasehold/detail/timer.hpp"
#include "leasehold/observer.hpp"

#include "tell_observer.hpp"

namespace leasehold {
namespace detail {

void throw_lease_lost(std::error_code cause) {
  throw Error(make_error_code(errc::lease_lost),
              cause ? "the lease could not be extended before its deadline: " + cause.message()
                    : std::string("the lease expired or was taken over"));
}

// One kept lease: two timers on the client's executor (the next extension, the deadline) that
// follow a KeepAliveSchedule, and the loss, reported once. The timers are touched on the client's
// executor only; the report and the end are guarded by `mutex_`, so that they can be read, and
// stop() called, from any thread.
class KeepAliveState : public std::enable_shared_from_this<KeepAliveState> {
 public:
  KeepAliveState(Client& client, std::shared_ptr<LeaseState> lease,
                 std::chrono::milliseconds max_hold)
      : client_(client),
        observer_(client.options().observer.get()),
        lease_(std::move(lease)),
        schedule_(lease_->ttl),
        tick_(client.get_executor()),
        deadline_timer_(client.get_executor()),
        budget_timer_(client.get_executor()),
        hold_until_(max_hold > std::chrono::milliseconds::zero() ? Clock::now() + max_hold
                                                                 : Clock::time_point::max()) {}

  void start() {
    asio::post(tick_.get_executor(), [self = shared_from_this()] { self->begin(); });
  }

  void stop() noexcept {
    {
      std::lock_guard lock(mutex_);
      if (ended_)
        return;
      ended_ = true;
    }
    try {
      asio::post(tick_.get_executor(), [self = shared_from_this()] {
        self->tick_.cancel();
        self->deadline_timer_.cancel();
        self->budget_timer_.cancel();
      });
    } catch (...) {
      // The timers' handlers see ended_ and stop on their own.
    }
  }

  bool lost() const noexcept {
    std::lock_guard lock(mutex_);
    return lost_;
  }
  std::error_code cause() const noexcept {
    std::lock_guard lock(mutex_);
    return lost_ ? cause_ : std::error_code{};
  }
  std::stop_token stop_token() const noexcept { return loss_.get_token(); }
  Clock::time_point deadline() const noexcept { return lease_->deadline(); }

 private:
  bool ended() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }

  void begin() {
    if (ended())
      return;
    arm_budget();
    arm_deadline();
    follow(schedule_.start(lease_->deadline()));
  }

  // Performs a step of the schedule.
  void follow(const KeepAliveSchedule::Step& step) {
    if (step.kind == KeepAliveSchedule::Step::Kind::lost) {
      declare_lost(step.cause);
      return;
    }
    if (step.deadline_moved)
      arm_deadline();
    schedule_extend(step.at);
  }

  void schedule_extend(Clock::time_point at) {
    if (at >= hold_until_)
      return;  // the budget ends first: no extension past it
    tick_.expires_at(at);
    tick_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec && !self->ended())
        self->extend();
    });
  }

  // The extension's query tells the client's observer.
  void extend() {
    client_.async_process(ExtendLock<void>(lease_),
                          [self = shared_from_this()](std::error_code ec, bool held) {
                            self->on_extended(ec, held);
                          });
  }

  void on_extended(std::error_code ec, bool held) {
    if (ended())
      return;
    follow(schedule_.extended(ec, held, Clock::now(), lease_->deadline()));
  }

  void arm_deadline() {
    deadline_timer_.expires_at(lease_->deadline());
    deadline_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (ec || self->ended())
        return;
      if (const auto lost =
              self->schedule_.deadline_reached(Clock::now(), self->lease_->deadline()))
        self->follow(*lost);
      else
        self->arm_deadline();  // an extension moved it meanwhile
    });
  }

  // The hold budget: when it is spent, the lease is given up as lost (it then runs out at its
  // TTL, or is released by its holder).
  void arm_budget() {
    if (hold_until_ == Clock::time_point::max())
      return;
    budget_timer_.expires_at(hold_until_);
    budget_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec && !self->ended())
        self->declare_lost(make_error_code(errc::hold_budget_exceeded));
    });
  }

  void declare_lost(std::error_code cause) {
    {
      std::lock_guard lock(mutex_);
      if (ended_)
        return;
      ended_ = true;
      lost_ = true;
      cause_ = cause;
    }
    tick_.cancel();
    deadline_timer_.cancel();
    budget_timer_.cancel();
    using Cause = LossEvent::Cause;
    tell(observer_, &Observer::on_loss,
         LossEvent{lease_->key,
                   !cause                                ? Cause::expired_or_taken_over
                   : cause == errc::hold_budget_exceeded ? Cause::hold_budget
                   : cause == condition::transient       ? Cause::unreachable
                                                         : Cause::closed,
                   cause});
    // Outside the mutex: the stop callbacks run here and may read lost() and cause().
    loss_.request_stop();
  }

  Client& client_;
  Observer* const observer_;  // the client's, if it has one
  const std::shared_ptr<LeaseState> lease_;
  KeepAliveSchedule schedule_;  // on the client's executor
  Timer tick_;
  Timer deadline_timer_;
  Timer budget_timer_;
  const Clock::time_point hold_until_;  // max(): no hold budget
  std::stop_source loss_;
  mutable std::mutex mutex_;
  bool ended_ = false;  // stopped or lost: nothing more happens
  bool lost_ = false;
  std::error_code cause_;
};

}  // namespace detail

KeepAlive::KeepAlive(Client& client, std::shared_ptr<detail::LeaseState> lease,
                     std::chrono::milliseconds max_hold)
    : state_(std::make_shared<detail::KeepAliveState>(client, std::move(lease), max_hold)) {
  state_->start();
}

KeepAlive::~KeepAlive() {
  stop();
}

KeepAlive& KeepAlive::operator=(KeepAlive&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
  }
  return *this;
}

bool KeepAlive::lost() const noexcept {
  return state_ && state_->lost();
}

std::error_code KeepAlive::cause() const noexcept {
  return state_ ? state_->cause() : std::error_code{};
}

std::stop_token KeepAlive::stop_token() const noexcept {
  return state_ ? state_->stop_token() : std::stop_token{};
}

bool KeepAlive::held(Clock::time_point now) const noexcept {
  return state_ && !state_->lost() && now < state_->deadline();
}

void KeepAlive::stop() noexcept {
  if (state_)
    state_->stop();
}

}  // namespace leasehold
