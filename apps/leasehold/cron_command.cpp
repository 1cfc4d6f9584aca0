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

}  // namespace

int cron(const Globals& globals, const CronOptions& options) {
  const CronPlan plan = checked_plan(options);
  set_holder_label(command_label(options.command));      // who holds it, for status and list
  block_forwarded_signals();                             // before any thread starts
  const MetricsFile metrics_file(options.metrics_file);  // after every tick, and at the end
  Client redis = connect_or_exit(globals, metrics_file.metrics());
  // The CLI claims each interval itself (cron::IntervalLease), so it tells each tick itself.
  const auto tell_tick = [&](CronTickEvent::Outcome outcome, Clock::duration duration) {
    if (metrics_file.metrics())
      metrics_file.metrics()->on_cron_tick(CronTickEvent{options.name, outcome, duration});
    metrics_file.write();
  };
  cron::OncePerIntervalOptions lease_options;
  lease_options.lease = plan.lease;
  lease_options.aligned = options.aligned;
  lease_options.prefix = globals.prefix;
  auto interval_lease =
      std::make_shared<cron::IntervalLease>(redis, options.name, options.every, lease_options);

  std::mutex children_mutex;
  std::vector<pid_t> children;  // runs in progress, for forwarding signals
  std::atomic<long long> ticks_done{0};
  std::atomic<bool> stopping{false};
  std::atomic<bool> data_error{
      false};  // a key of the job holds another type: every tick would fail

  auto job = [&](const cron::Tick& tick) {
    if (stopping || (options.ticks && static_cast<long long>(tick.run) > *options.ticks))
      return;
    const std::string label = "cron '" + options.name + "' tick " + std::to_string(tick.run);
    std::optional<cron::IntervalClaim> claim;
    try {
      claim = interval_lease->claim();
    } catch (const Error& e) {
      tell_tick(CronTickEvent::Outcome::failed, Clock::duration::zero());
      if (e.code() == errc::wrong_type) {
        warn(label + ": " + wrong_type_message(globals, redis, options.name, e));
        data_error = true;
        return;
      }
      warn(label + ": could not reach Redis: " + e.what());
      ++ticks_done;
      return;
    }
    if (!claim) {
      say(globals, label + ": skipped (another host holds this interval)");
      tell_tick(CronTickEvent::Outcome::skipped, Clock::duration::zero());
      ++ticks_done;
      return;
    }
    const auto started = Clock::now();
    int status = 0;
    CommandEnd end;
    bool spawned = false;
    const auto run_child = [&](std::stop_token stop) {
      std::lock_guard spawning(children_mutex);  // no spawn after a stop was forwarded
      if (stopping)
        return;
      std::vector<std::pair<std::string, std::string>> environment{
          {"LEASEHOLD_NAME", options.name}, {"LEASEHOLD_TOKEN", claim->token.id().hex()}};
      if (claim->slot)
        environment.emplace_back("LEASEHOLD_SLOT", std::to_string(*claim->slot));
      const Child child = spawn_child(options.command, environment);
      if (child.pid < 0) {
        spawned = true;  // the tick was used: it reports the failure as its exit status
        status = report_spawn_failure(options.command.front(), child.spawn_error) << 8;
        return;
      }
      spawned = true;
      children.push_back(child.pid);
      children_mutex.unlock();
      // The main thread takes the signals and passes them on to the runs in progress.
      end = supervise(child, {.max_time = options.max_time,
                              .kill_after = options.kill_after,
                              .lost = [&stop] { return stop.stop_requested(); },
                              .forward_signals = false,
                              .reaps_orphans = false});
      status = end.status;
      children_mutex.lock();
      std::erase(children, child.pid);
    };
    // A run longer than the lease keeps it extended (aligned slots need no extension) until it
    // has ended, also while it is being stopped for --max-time: its group still runs. A run whose
    // lease is lost is stopped.
    bool lost = false;
    if (options.aligned) {
      run_child({});
    } else {
      lost = while_held(redis, claim->token, run_child).was_lost();
    }
    if (!spawned) {
      // Stopping between the claim and the spawn: give the interval back to the other hosts.
      std::error_code ignored;
      redis.process(claim->token.release(), ignored);
      say(globals, label + ": not run (stopping)");
      ++ticks_done;
      return;
    }
    const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    const std::string how = end.killed ? "killed" : "terminated";
    if (end.stopped == StopCause::max_time) {
      warn(label + ": ran past --max-time " + format_duration(options.max_time) + "; " + how +
           " after " + format_duration(took));
      tell_tick(CronTickEvent::Outcome::failed, Clock::now() - started);
    } else if (end.stopped == StopCause::lost) {
      warn(label + ": its lease was lost (it expired or could not be extended); " + how +
           " after " + format_duration(took));
      tell_tick(CronTickEvent::Outcome::failed, Clock::now() - started);
    } else {
      say(globals, label + ": ran, exit " + std::to_string(exit_code_of(status)) + " in " +
                       format_duration(took) + (lost ? " (its lease was lost as it ended)" : ""));
      tell_tick(CronTickEvent::Outcome::ran, Clock::now() - started);
    }
    ++ticks_done;
  };

  cron::Scheduler scheduler;
  scheduler.add(options.name, plan.interval, job);
  auto running = scheduler.start();
  const sigset_t signals = forwarded_signals();
  int exit_code = 0;
  for (;;) {
    if (options.ticks && ticks_done >= *options.ticks)
      break;
    if (data_error) {
      exit_code = kExitDataErr;
      break;
    }
    timespec timeout{0, 20'000'000};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGINT || signal == SIGTERM) {
      // Stop scheduling; the run in progress gets the signal and is waited for.
      say(globals, "cron '" + options.name + "': stopping");
      std::lock_guard guard(children_mutex);
      stopping = true;
      for (pid_t child : children)
        kill(child, signal);
      exit_code = 0;
      break;
    }
    if (signal == SIGHUP) {
      std::lock_guard guard(children_mutex);
      for (pid_t child : children)
        kill(child, signal);
    }
  }
  running.shutdown();
  return exit_code;
}

}  // namespace leasehold::cli
