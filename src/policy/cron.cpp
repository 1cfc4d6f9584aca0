#include "leasehold/cron.hpp"

#include <atomic>
#include <thread>

#include "leasehold/log.hpp"
#include "leasehold/observer.hpp"
#include "leasehold/while_held.hpp"
#include "policy_scripts.hpp"
#include "scripts.hpp"
#include "tell_observer.hpp"

namespace leasehold::cron {
namespace {

std::string milliseconds_text(Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// src/policy/scripts/cron_aligned_claim.lua
const Script& aligned_claim_script() {
  static const Script script{std::string(leasehold::detail::lua::cron_aligned_claim)};
  return script;
}

using CronLock = Lock<std::string>;

// An aligned claim as a query: one script call, whose grant carries the slot's lease token.
class AlignedClaim {
 public:
  using result_type = std::optional<IntervalClaim>;
  using effect = Write<CronLock>;

  AlignedClaim(std::string slot_key, std::string high_key, std::chrono::milliseconds interval,
               std::chrono::milliseconds ttl)
      : slot_key_(std::move(slot_key)),
        high_key_(std::move(high_key)),
        interval_(interval),
        ttl_(ttl),
        id_(LeaseId::generate()),
        value_(id_.hex() + leasehold::detail::holder_suffix()) {}

  Request request() const {
    const leasehold::detail::DecimalDigits interval(interval_.count());
    const leasehold::detail::DecimalDigits ttl(ttl_.count());
    const std::string_view keys[] = {slot_key_, high_key_};
    const std::string_view args[] = {id(), interval.view(), ttl.view()};
    // Retry-safe: a rerun in the same slot finds this id and grants it again (in a later slot,
    // it claims that one instead).
    return Request::script(aligned_claim_script(), keys, args).retry_safe().grants_lease();
  }

  Result<result_type> parse(const Reply& reply, const Timing& timing) const {
    if (reply.is_error())
      return error_result<result_type>(reply);
    if (reply.type != Reply::Type::array || reply.elements.size() != 2 ||
        reply.elements[0].type != Reply::Type::integer ||
        reply.elements[1].type != Reply::Type::integer)
      return Result<result_type>(make_error_code(errc::unexpected_reply), to_string(reply));
    if (reply.elements[0].integer != 1)
      return result_type{};
    const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
    if (timing.received >= deadline)
      return leasehold::detail::granted_too_late<result_type>();
    auto state = std::make_shared<leasehold::detail::LeaseState>(slot_key_, id_, ttl_, deadline,
                                                                 nullptr, std::string(), value_);
    return result_type{
        IntervalClaim{leasehold::detail::TokenAccess::make<LockToken<CronLock>>(std::move(state)),
                      reply.elements[1].integer}};
  }

  // The claim may have been granted: give it back, so that another replica may take the slot.
  std::optional<Request> on_unknown_outcome() const {
    const std::string_view keys[] = {slot_key_};
    const std::string_view args[] = {id()};
    return Request::script(leasehold::detail::lock_release_script(), keys, args);
  }

 private:
  std::string_view id() const noexcept { return value_; }

  std::string slot_key_;
  std::string high_key_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds ttl_;
  LeaseId id_;
  std::string value_;  // the id and its holder, as stored
};

}  // namespace

Clock::duration period(const Interval& interval) {
  return std::visit([](const auto& kind) { return kind.every; }, interval);
}

// Schedule

Schedule::Schedule(Interval interval, Clock::time_point first) : interval_(interval), next_(first) {
  if (period(interval_) <= Clock::duration::zero())
    throw Error(make_error_code(errc::invalid_argument), "a job's interval must be positive");
}

Clock::time_point Schedule::due() const noexcept {
  const bool waits_for_finish = !std::holds_alternative<AfterStart>(interval_) && running_ > 0;
  return waits_for_finish ? Clock::time_point::max() : next_;
}

bool Schedule::can_start(Clock::time_point now) const noexcept {
  return now >= due();
}

Tick Schedule::start(Clock::time_point now) {
  const Tick tick{.scheduled = next_, .run = ++runs_, .slot = std::nullopt};
  ++running_;
  const Clock::duration every = period(interval_);
  if (std::holds_alternative<AtLeast>(interval_)) {
    next_ = now + every;  // at least `every` after this start, and after this run ends
  } else if (std::holds_alternative<AfterFinish>(interval_)) {
    next_ = Clock::time_point::max();  // known when this run ends
  } else {
    // After the previous *scheduled* start: runs keep their rhythm (and may fire slightly less
    // than `every` apart when a start was late). After a stall, the missed runs are skipped: the
    // next one is the first point of the rhythm after now, never a burst of catch-ups.
    next_ = tick.scheduled + every;
    if (next_ <= now)
      next_ += ((now - next_) / every + 1) * every;
  }
  return tick;
}

void Schedule::finish(Clock::time_point now) {
  if (running_ > 0)
    --running_;
  if (std::holds_alternative<AfterFinish>(interval_))
    next_ = now + period(interval_);
}

// Scheduler

Scheduler& Scheduler::add_job(std::string name, Interval interval, Job job) {
  if (period(interval) <= Clock::duration::zero())
    throw Error(make_error_code(errc::invalid_argument),
                "the interval of job '" + name + "' must be positive");
  entries_.push_back({std::move(name), interval, std::move(job)});
  return *this;
}

struct Scheduler::Running::State {
  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
  int runs_in_progress = 0;
  std::vector<std::thread> job_threads;
};

namespace {

void run_once(const std::string& name, Job& job, const Tick& tick) {
  const auto started = Clock::now();
  try {
    const std::error_code ec = job(tick);
    if (ec) {
      log(LogLevel::error,
          "cron job '" + name + "' run " + std::to_string(tick.run) + " failed: " + ec.message());
    } else {
      log(LogLevel::debug, "cron job '" + name + "' run " + std::to_string(tick.run) + " done in " +
                               milliseconds_text(Clock::now() - started));
    }
  } catch (const std::exception& e) {
    log(LogLevel::error,
        "cron job '" + name + "' run " + std::to_string(tick.run) + " threw: " + e.what());
  } catch (...) {
    log(LogLevel::error, "cron job '" + name + "' run " + std::to_string(tick.run) +
                             " threw an exception that is not a std::exception");
  }
}

}  // namespace

Scheduler::Running Scheduler::start() {
  auto state = std::make_shared<Running::State>();
  const auto now = Clock::now();
  for (auto& entry : entries_) {
    state->job_threads.emplace_back([state, entry, now]() mutable {
      Schedule schedule(entry.interval, now);
      const bool overlapping = std::holds_alternative<AfterStart>(entry.interval);
      std::unique_lock lock(state->mutex);
      for (;;) {
        state->changed.wait_until(lock, schedule.due(), [&] {
          return state->stopping || schedule.can_start(Clock::now());
        });
        if (state->stopping)
          break;
        if (!schedule.can_start(Clock::now()))
          continue;
        const Tick tick = schedule.start(Clock::now());
        ++state->runs_in_progress;
        if (overlapping) {
          // Each run on a thread of its own, so that a slow run overlaps the next.
          std::thread([state, &schedule, job = entry.job, name = entry.name, tick]() mutable {
            run_once(name, job, tick);
            std::lock_guard inner(state->mutex);
            schedule.finish(Clock::now());
            --state->runs_in_progress;
            state->changed.notify_all();
          }).detach();
        } else {
          lock.unlock();
          run_once(entry.name, entry.job, tick);
          lock.lock();
          schedule.finish(Clock::now());
          --state->runs_in_progress;
          state->changed.notify_all();
        }
      }
      // `schedule` lives on this stack: wait for this job's detached runs before leaving.
      state->changed.wait(lock, [&] { return schedule.running() == 0; });
    });
  }
  return Running(std::move(state));
}

void Scheduler::Running::shutdown() {
  if (!state_)
    return;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    state_->changed.notify_all();
  }
  for (auto& thread : state_->job_threads)
    if (thread.joinable())
      thread.join();
  state_.reset();
}

Scheduler::Running::~Running() {
  shutdown();
}

// IntervalLease

IntervalLease::IntervalLease(Client& redis, std::string name, Clock::duration interval,
                             OncePerIntervalOptions options)
    : redis_(redis), name_(std::move(name)), interval_(interval), options_(std::move(options)) {
  using std::chrono::milliseconds;
  if (interval_ < milliseconds(2))
    throw Error(make_error_code(errc::invalid_argument),
                "the interval of '" + name_ + "' must be at least 2 ms");
  lease_ = options_.lease.count() != 0
               ? options_.lease
               : std::chrono::duration_cast<milliseconds>(interval_ * 9 / 10);
  leasehold::detail::validate_ttl(lease_);
  if (lease_ >= interval_) {
    throw Error(make_error_code(errc::invalid_argument),
                "the lease of '" + name_ + "' (" + milliseconds_text(lease_) +
                    ") must be shorter than its interval (" + milliseconds_text(interval_) +
                    "): a lease that outlives the interval makes replicas skip whole intervals");
  }
  const CronLock lock("cron", lease_, options_.prefix);  // validates the prefix now
  if (name_.empty())
    throw Error(make_error_code(errc::invalid_argument), "a cron job's name must not be empty");
  if (options_.aligned) {
    // Both keys live long enough that a server clock falling back kAlignedStepBack still finds
    // the highest slot claimed; in one hash tag, so that one script may touch both in a cluster.
    keys_ttl_ = std::chrono::duration_cast<milliseconds>(kAlignedStepBack + interval_);
    if (keys_ttl_ > kMaxTtl)
      throw Error(make_error_code(errc::invalid_argument),
                  "the interval of '" + name_ + "' is too long for aligned mode");
    const std::string tagged = lock.with_fencing().key(name_);  // "<prefix>:Lock:{cron:<name>}"
    slot_key_ = tagged + ":slot";
    high_key_ = tagged + ":high";
  }
}

std::vector<std::vector<LeaseKey>> once_per_interval_keys(const std::string& name,
                                                          std::string_view prefix) {
  const CronLock lock("cron", std::chrono::milliseconds(1000), prefix);
  const std::string tagged = lock.with_fencing().key(name);
  return {{{lock.key(name), "string"}},
          {{tagged + ":slot", "string"}, {tagged + ":high", "string"}}};
}

std::optional<IntervalClaim> IntervalLease::claim() {
  if (!options_.aligned) {
    const CronLock lock("cron", lease_, options_.prefix);
    auto token = redis_.process(lock.try_lock(name_));
    if (!token)
      return std::nullopt;
    return IntervalClaim{std::move(*token), std::nullopt};
  }
  // Aligned: the slot comes from the server's clock, so replicas with skewed clocks agree on it;
  // the script reads it and decides in one step, so no two claims see the same high-water mark.
  return redis_.process(
      AlignedClaim(slot_key_, high_key_,
                   std::chrono::duration_cast<std::chrono::milliseconds>(interval_), keys_ttl_));
}

Job detail::once_per_interval_job(std::shared_ptr<IntervalLease> lease, Job job) {
  return [lease = std::move(lease),
          job = std::move(job)](const Tick& tick) mutable -> std::error_code {
    Observer* observer = lease->client().options().observer.get();
    const auto tell_tick = [&](CronTickEvent::Outcome outcome, Clock::duration duration) {
      leasehold::detail::tell(observer, &Observer::on_cron_tick,
                              CronTickEvent{lease->name(), outcome, duration});
    };
    std::optional<IntervalClaim> claim;
    try {
      claim = lease->claim();
    } catch (const Error& e) {
      log(LogLevel::error,
          "cron job '" + lease->name() + "': could not take its lease: " + e.what());
      tell_tick(CronTickEvent::Outcome::failed, Clock::duration::zero());
      return e.code();
    }
    if (!claim) {
      log(LogLevel::info, "cron job '" + lease->name() + "' run " + std::to_string(tick.run) +
                              " skipped: another replica holds this interval");
      tell_tick(CronTickEvent::Outcome::skipped, Clock::duration::zero());
      return {};
    }
    Tick granted = tick;
    granted.slot = claim->slot;
    const Clock::time_point started = Clock::now();
    // Told even when the job throws: it ran.
    struct TellRan {
      decltype(tell_tick)& tell;
      Clock::time_point started;
      ~TellRan() { tell(CronTickEvent::Outcome::ran, Clock::now() - started); }
    } tell_ran{tell_tick, started};
    // Never released: the lease covers the interval, so offset replicas skip it.
    if (!lease->options().extend_while_running || lease->options().aligned)
      return job(granted);
    std::error_code result;
    const Held<void> held =
        while_held(lease->client(), claim->token, [&](std::stop_token) { result = job(granted); });
    if (held.was_lost()) {
      log(LogLevel::warning, "cron job '" + lease->name() + "' run " + std::to_string(tick.run) +
                                 " lost its lease while running");
    }
    return result;
  };
}

}  // namespace leasehold::cron
