// leasehold cron: runs COMMAND at startup and then every interval, at most once per interval
// across every host that runs the same NAME.
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <mutex>

#include "cli.hpp"
#include "supervise.hpp"

namespace leasehold::cli {

using std::chrono::milliseconds;

std::optional<milliseconds> default_cron_lease(milliseconds every) {
  const milliseconds lease = std::min(every - every / 10, every - milliseconds(1000));
  if (lease <= milliseconds::zero())
    return std::nullopt;
  return lease;
}

namespace {

// What the options ask for, checked: the lease of each interval and the schedule.
struct CronPlan {
  milliseconds lease;
  cron::Interval interval;
};

CronPlan checked_plan(const CronOptions& options) {
  if (options.name.empty())
    throw UsageError{"cron: NAME must not be empty"};
  if (options.command.empty())
    throw UsageError{"cron: no COMMAND given (leasehold cron --every DUR NAME -- COMMAND ...)"};
  if (options.every <= milliseconds::zero())
    throw UsageError{"--every: must be positive"};
  std::optional<milliseconds> lease =
      options.lease ? options.lease : default_cron_lease(options.every);
  // An aligned job claims server-time slots and takes no lease of --lease's length: a short
  // interval needs no room for one.
  if (!lease && options.aligned && options.every > milliseconds(1))
    lease = options.every - std::max(options.every / 10, milliseconds(1));
  if (!lease) {
    throw UsageError{"--lease: the interval " + format_duration(options.every) +
                     " is too short for the default lease (10% and at least 1 s less); give "
                     "--lease"};
  }
  if (*lease >= options.every) {
    throw UsageError{"--lease " + format_duration(*lease) + " must be shorter than --every " +
                     format_duration(options.every)};
  }
  if (*lease <= milliseconds::zero())
    throw UsageError{"--lease: must be positive"};
  if (options.max_time < milliseconds::zero())
    throw UsageError{"--max-time: must not be negative"};
  CronPlan plan{.lease = *lease, .interval = {}};
  if (options.mode == "at-least")
    plan.interval = cron::AtLeast{options.every};
  else if (options.mode == "after-finish")
    plan.interval = cron::AfterFinish{options.every};
  else if (options.mode == "after-start")
    plan.interval = cron::AfterStart{options.every};
  else
    throw UsageError{"--mode: use at-least, after-finish or after-start"};
  return plan;
}

// One `leasehold cron` job: its ticks, the runs they start, and the signals that stop it.
class CronJob {
 public:
  CronJob(const Globals& globals, const CronOptions& options, const CronPlan& plan,
          const MetricsFile& metrics_file, Client& redis)
      : globals_(globals), options_(options), metrics_file_(metrics_file), redis_(redis) {
    cron::OncePerIntervalOptions lease_options;
    lease_options.lease = plan.lease;
    lease_options.aligned = options.aligned;
    lease_options.prefix = globals.prefix;
    interval_lease_ =
        std::make_shared<cron::IntervalLease>(redis, options.name, options.every, lease_options);
  }

  // One tick: claims the interval and, if this host got it, runs the command under its lease.
  void tick(const cron::Tick& tick) {
    if (stopping_ || (options_.ticks && static_cast<long long>(tick.run) > *options_.ticks))
      return;
    const std::string label = "cron '" + options_.name + "' tick " + std::to_string(tick.run);
    if (std::optional<cron::IntervalClaim> claim = claim_interval(label))
      run_under(*claim, label);
    ++ticks_done_;
  }

  // Until SIGTERM or SIGINT (which the runs in progress get too), --ticks ticks, or a key of the
  // job of another type: the exit code.
  int wait_for_end() {
    const sigset_t signals = forwarded_signals();
    for (;;) {
      if (data_error_)
        return kExitDataErr;
      if (options_.ticks && ticks_done_ >= *options_.ticks)
        return 0;
      timespec timeout{0, 20'000'000};
      const int signal = sigtimedwait(&signals, nullptr, &timeout);
      if (signal == SIGINT || signal == SIGTERM) {
        // Stop scheduling; the run in progress gets the signal and is waited for.
        say(globals_, "cron '" + options_.name + "': stopping");
        std::lock_guard guard(children_mutex_);
        stopping_ = true;
        forward_to_runs(signal);
        return 0;
      }
      if (signal == SIGHUP) {
        std::lock_guard guard(children_mutex_);
        forward_to_runs(signal);
      }
    }
  }

 private:
  // The CLI claims each interval itself (cron::IntervalLease), so it tells each tick itself.
  void tell_tick(CronTickEvent::Outcome outcome, Clock::duration duration) const {
    if (metrics_file_.metrics())
      metrics_file_.metrics()->on_cron_tick(CronTickEvent{options_.name, outcome, duration});
    metrics_file_.write();
  }

  // This interval's lease, or nothing: another host holds it, or Redis failed (said and told).
  std::optional<cron::IntervalClaim> claim_interval(const std::string& label) {
    std::optional<cron::IntervalClaim> claim;
    try {
      claim = interval_lease_->claim();
    } catch (const Error& e) {
      tell_tick(CronTickEvent::Outcome::failed, Clock::duration::zero());
      if (e.code() == errc::wrong_type) {
        warn(label + ": " + wrong_type_message(globals_, redis_, options_.name, e));
        data_error_ = true;
      } else {
        warn(label + ": could not reach Redis: " + e.what());
      }
      return std::nullopt;
    }
    if (!claim) {
      say(globals_, label + ": skipped (another host holds this interval)");
      tell_tick(CronTickEvent::Outcome::skipped, Clock::duration::zero());
    }
    return claim;
  }

  // Runs the command for `claim` (the lease kept extended while it runs, unless aligned slots,
  // which need no extension), and says how it went.
  void run_under(cron::IntervalClaim& claim, const std::string& label) {
    const auto started = Clock::now();
    Run run;
    bool lost = false;
    if (options_.aligned)
      run = run_command(claim, {});
    else
      lost = while_held(redis_, claim.token, [&](std::stop_token stop) {
               run = run_command(claim, stop);
             }).was_lost();
    if (!run.spawned) {
      // Stopping between the claim and the spawn: give the interval back to the other hosts.
      std::error_code ignored;
      redis_.process(claim.token.release(), ignored);
      say(globals_, label + ": not run (stopping)");
      return;
    }
    report(run, label, Clock::now() - started, lost);
  }

  struct Run {
    bool spawned = false;
    int status = 0;  // from waitpid (a failed spawn's exit code, shifted as waitpid would)
    CommandEnd end;
  };

  // Spawns the command and supervises it: stopped when `stop` is requested (its lease was lost)
  // or at --max-time. Not spawned once the job is stopping.
  Run run_command(const cron::IntervalClaim& claim, std::stop_token stop) {
    Run run;
    std::unique_lock spawning(children_mutex_);  // no spawn after a stop was forwarded
    if (stopping_)
      return run;
    std::vector<std::pair<std::string, std::string>> environment{
        {"LEASEHOLD_NAME", options_.name}, {"LEASEHOLD_TOKEN", claim.token.id().hex()}};
    if (claim.slot)
      environment.emplace_back("LEASEHOLD_SLOT", std::to_string(*claim.slot));
    Child child = spawn_child(options_.command, environment, options_.kill_after);
    run.spawned = true;  // a failed spawn used the tick too: it reports as its exit status
    if (child.pid < 0) {
      run.status = report_spawn_failure(options_.command.front(), child.spawn_error) << 8;
      return run;
    }
    children_.push_back(child.pid);
    spawning.unlock();
    // The main thread takes the signals and passes them on to the runs in progress.
    run.end = supervise(child, {.max_time = options_.max_time,
                                .kill_after = options_.kill_after,
                                .lost = [&stop] { return stop.stop_requested(); },
                                .forward_signals = false,
                                .reaps_orphans = false});
    run.status = run.end.status;
    spawning.lock();
    std::erase(children_, child.pid);
    return run;
  }

  void report(const Run& run, const std::string& label, Clock::duration took, bool lost) const {
    const std::string after =
        " after " + format_duration(std::chrono::duration_cast<milliseconds>(took));
    const std::string how = run.end.killed ? "killed" : "terminated";
    if (run.end.stopped == StopCause::max_time) {
      warn(label + ": ran past --max-time " + format_duration(options_.max_time) + "; " + how +
           after);
      tell_tick(CronTickEvent::Outcome::failed, took);
    } else if (run.end.stopped == StopCause::lost) {
      warn(label + ": its lease was lost (it expired or could not be extended); " + how + after);
      tell_tick(CronTickEvent::Outcome::failed, took);
    } else {
      say(globals_, label + ": ran, exit " + std::to_string(exit_code_of(run.status)) + " in " +
                        format_duration(std::chrono::duration_cast<milliseconds>(took)) +
                        (lost ? " (its lease was lost as it ended)" : ""));
      tell_tick(CronTickEvent::Outcome::ran, took);
    }
  }

  // Under children_mutex_.
  void forward_to_runs(int signal) const {
    for (pid_t child : children_)
      kill(child, signal);
  }

  const Globals& globals_;
  const CronOptions& options_;
  const MetricsFile& metrics_file_;
  Client& redis_;
  std::shared_ptr<cron::IntervalLease> interval_lease_;
  std::mutex children_mutex_;
  std::vector<pid_t> children_;  // runs in progress, for forwarding signals
  std::atomic<long long> ticks_done_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> data_error_{false};  // a key of the job holds another type: every tick fails
};

}  // namespace

int cron(const Globals& globals, const CronOptions& options) {
  const CronPlan plan = checked_plan(options);
  set_holder_label(command_label(options.command));      // who holds it, for status and list
  block_forwarded_signals();                             // before any thread starts
  const MetricsFile metrics_file(options.metrics_file);  // after every tick, and at the end
  Client redis = connect_or_exit(globals, metrics_file.metrics());
  CronJob job(globals, options, plan, metrics_file, redis);
  cron::Scheduler scheduler;
  scheduler.add(options.name, plan.interval, [&job](const cron::Tick& tick) { job.tick(tick); });
  auto running = scheduler.start();
  const int exit_code = job.wait_for_end();
  running.shutdown();
  return exit_code;
}

}  // namespace leasehold::cli
