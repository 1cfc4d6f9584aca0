// leasehold run: a distributed flock(1). Runs COMMAND while holding the lease NAME.
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <stop_token>
#include <thread>

#include "cli.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

// While the command runs it owns the terminal (if leasehold had it), so that it can read from
// it: a background process group that reads the terminal is stopped by SIGTTIN.
struct TerminalHandover {
  explicit TerminalHandover(pid_t child_group) {
    if (::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp()) {
      sigset_t ttou;
      sigemptyset(&ttou);
      sigaddset(&ttou, SIGTTOU);  // taking the terminal back from the background is allowed
      pthread_sigmask(SIG_BLOCK, &ttou, nullptr);
      handed = ::tcsetpgrp(STDIN_FILENO, child_group) == 0;
    }
  }
  ~TerminalHandover() {
    if (handed)
      ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
  }
  bool handed = false;
};

// "held by a writer, 3fa2b1c0… (12.3 s left)" or "shared by 2 readers (longest 4.1 s left)".
std::string describe_holder(Client& redis, const RwLock<std::string>& lock,
                            const std::string& name) {
  try {
    const Reply writer = redis.process(Command{"GET", lock.writer_key(name)});
    if (writer.type == Reply::Type::string) {
      const Reply ttl = redis.process(Command{"PTTL", lock.writer_key(name)});
      return "held exclusively by " + writer.str.substr(0, 8) + "\xe2\x80\xa6 (" +
             format_duration(milliseconds(std::max(0LL, ttl.integer))) + " left)";
    }
    const Reply readers = redis.process(Command{"ZCARD", lock.readers_key(name)});
    const Reply ttl = redis.process(Command{"PTTL", lock.readers_key(name)});
    if (readers.integer > 0) {
      return "shared by " + std::to_string(readers.integer) + " reader(s) (longest " +
             format_duration(milliseconds(std::max(0LL, ttl.integer))) + " left)";
    }
  } catch (const Error&) {
  }
  return "held";
}

// "held by 3 of 3 permit holders (the first ends in 2.1 s)".
std::string describe_permits(Client& redis, const Semaphore<std::string>& permits,
                             const std::string& name) {
  try {
    const Reply first =
        redis.process(Command{"ZRANGE", permits.holders_key(name), "0", "0", "WITHSCORES"});
    const Reply time = redis.process(Command{"TIME"});
    const Reply count = redis.process(Command{"ZCARD", permits.holders_key(name)});
    if (first.elements.size() == 2 && time.elements.size() == 2) {
      const long long now_ms =
          std::stoll(time.elements[0].str) * 1000 + std::stoll(time.elements[1].str) / 1000;
      const long long left = std::max(0LL, std::stoll(first.elements[1].str) - now_ms);
      return "held by " + std::to_string(count.integer) + " of " +
             std::to_string(permits.permits()) + " permit holders (the first ends in " +
             format_duration(milliseconds(left)) + ")";
    }
  } catch (const std::exception&) {
  }
  return "held by all " + std::to_string(permits.permits()) + " permit holders";
}

enum class GroupState { gone, running, out_of_reach };

// What is left of a process group: kill(-group, 0) finds a member (a zombie too), none (ESRCH),
// or only members leasehold may not signal (EPERM).
GroupState group_state(pid_t group) {
  if (::kill(-group, 0) == 0)
    return GroupState::running;
  return errno == EPERM ? GroupState::out_of_reach : GroupState::gone;
}

// The lease NAME, kept alive from the moment it is taken (released when the guard is), or the
// exit code of a run that gives up waiting for it.
struct Taken {
  std::optional<LeaseGuard> lease;
  int exit_code = 0;
};

// One plain try (never queues), as with -n.
std::optional<LeaseGuard> try_once(const Globals& globals, const RunOptions& options, Client& redis,
                                   const RwLock<std::string>& lock,
                                   const std::optional<Semaphore<std::string>>& permits) {
  if (permits) {
    const auto acquire = permits->try_acquire(options.name);
    try {
      if (auto token = redis.process(acquire))
        return LeaseGuard(redis, std::move(*token), options.max_time);
      return std::nullopt;
    } catch (const Error& e) {
      if (outcome_unknown(e.code())) {
        std::error_code ignored;
        if (const auto cleanup = acquire.on_unknown_outcome())
          redis.process(Command(std::move(*cleanup)), ignored);
      }
      exit_failure(globals, redis, options.name, e);
    }
  }
  // One query value; on an unknown outcome (timeout), its id is released before leasehold
  // exits, so that the lease it may have taken is not left orphaned.
  const auto read = lock.try_read(options.name);
  const auto write = lock.try_write(options.name);
  try {
    if (options.shared) {
      if (auto token = redis.process(read))
        return LeaseGuard(redis, std::move(*token), options.max_time);
    } else {
      if (auto token = redis.process(write))
        return LeaseGuard(redis, std::move(*token), options.max_time);
    }
    return std::nullopt;
  } catch (const Error& e) {
    if (outcome_unknown(e.code())) {
      const auto cleanup = options.shared ? read.on_unknown_outcome() : write.on_unknown_outcome();
      std::error_code ignored;
      if (cleanup)
        redis.process(Command(std::move(*cleanup)), ignored);
    }
    exit_failure(globals, redis, options.name, e);
  }
}

// Waits in turn (told of each release) until the lease is ours, --wait runs out, or a forwarded
// signal arrives (nothing runs yet, nothing is held): the signal's number, or 0.
std::optional<LeaseGuard> wait_in_turn(const Globals& globals, const RunOptions& options,
                                       Client& redis, const RwLock<std::string>& lock,
                                       const std::optional<Semaphore<std::string>>& permits,
                                       int& signalled) {
  const Clock::time_point deadline =
      options.wait ? Clock::now() + *options.wait : Clock::time_point::max();
  std::stop_source stop;
  std::atomic<bool> waiting{true};
  // The forwarded signals are blocked in every thread: this one takes them while the wait runs.
  std::thread signals([&] {
    const sigset_t forwarded = forwarded_signals();
    while (waiting) {
      timespec pace{1, 0};  // a safety net: end_signals() wakes it at once
      const int signal = sigtimedwait(&forwarded, nullptr, &pace);
      if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
        signalled = signal;
        stop.request_stop();
        return;
      }
    }
  });
  const auto end_signals = [&] {
    waiting = false;
    // SIGCHLD is one of the signals it waits for, and no child runs yet: it wakes, and ends.
    pthread_kill(signals.native_handle(), SIGCHLD);
    signals.join();
  };
  try {
    std::optional<LeaseGuard> lease;
    if (permits) {
      if (auto token = acquire_until(redis, *permits, options.name, deadline, {}, stop.get_token()))
        lease.emplace(redis, std::move(*token), options.max_time);
    } else if (options.shared) {
      if (auto token = read_until(redis, lock, options.name, deadline, {}, stop.get_token()))
        lease.emplace(redis, std::move(*token), options.max_time);
    } else {
      if (auto token = write_until(redis, lock, options.name, deadline, {}, stop.get_token()))
        lease.emplace(redis, std::move(*token), options.max_time);
    }
    end_signals();
    return lease;
  } catch (const Error& e) {
    end_signals();
    exit_failure(globals, redis, options.name, e);
  }
}

// Acquire: at once, then (unless -n) in turn with the other waiters until it is ours or --wait
// runs out.
Taken take_lease(const Globals& globals, const RunOptions& options, Client& redis,
                 const RwLock<std::string>& lock,
                 const std::optional<Semaphore<std::string>>& permits) {
  // The first try is not a wait: its outcome is told here when it is the only one.
  const Clock::time_point started = Clock::now();
  const auto tell = [&](AcquireEvent::Outcome outcome, const std::string& key) {
    if (Observer* observer = redis.options().observer.get())
      observer->on_acquire(AcquireEvent{key, outcome, Clock::now() - started});
  };
  if (auto lease = try_once(globals, options, redis, lock, permits)) {
    tell(AcquireEvent::Outcome::acquired, lease->key());
    return Taken{std::move(lease)};
  }
  const auto holder = [&] {
    return permits ? describe_permits(redis, *permits, options.name)
                   : describe_holder(redis, lock, options.name);
  };
  const auto give_up = [&] {
    chat(globals, "'" + options.name + "' is " + holder() + "; giving up");
    return Taken{.lease = std::nullopt, .exit_code = options.conflict_exit_code};
  };
  if (options.nonblock || (options.wait && *options.wait <= milliseconds(0))) {
    tell(AcquireEvent::Outcome::busy,
         permits ? permits->holders_key(options.name) : lock.writer_key(options.name));
    return give_up();
  }
  chat(globals, "waiting for '" + options.name + "': " + holder());
  int signalled = 0;
  if (auto lease = wait_in_turn(globals, options, redis, lock, permits, signalled))
    return Taken{std::move(lease)};
  if (signalled != 0)
    return Taken{.lease = std::nullopt, .exit_code = 128 + signalled};
  return give_up();
}

// How the command's group ended.
struct CommandEnd {
  int status = 0;                                  // the command's, from waitpid
  std::optional<Clock::time_point> terminated_at;  // when the group got SIGTERM for a lost lease
  bool ended_first = false;  // the command had ended on its own when the loss was acted on
  bool killed = false;
  bool out_of_reach = false;  // members of the group could not be signalled
};

// Waits for the command; if the lease is lost meanwhile, stops its whole group (SIGTERM, then
// SIGKILL after --kill-after) and waits until nothing of it runs. Forwards the signals leasehold
// gets.
CommandEnd watch_command(const Child& child, const KeepAlive& keep_alive,
                         const RunOptions& options) {
  const sigset_t signals = forwarded_signals();
  const pid_t group = child.pid;
  CommandEnd end;
  bool reaped = false;
  for (;;) {
    for (int ended = 0;;) {
      const pid_t pid = waitpid(-1, &ended, WNOHANG);
      if (pid <= 0)
        break;
      if (pid == child.pid) {
        end.status = ended;
        reaped = true;
      }
    }
    // The command ended with the lease held: what it left in the background is not waited for.
    const bool lost = keep_alive.lost();
    if (reaped && !lost && !end.terminated_at)
      break;
    if (lost && !end.terminated_at) {
      // The lease is gone: stop everything the command started, even if the command has ended.
      end.ended_first = reaped;
      kill(-group, SIGTERM);
      end.terminated_at = Clock::now();
    }
    if (end.terminated_at) {
      // Exit only when nothing of the group runs (a member leasehold may not signal, EPERM,
      // cannot be stopped: after the SIGKILL it is given up on). While a member is left, the
      // group's id is not reused, so signalling it reaches no one else.
      if (reaped) {
        const GroupState left = group_state(group);
        if (left == GroupState::gone)
          break;
        if (left == GroupState::out_of_reach && end.killed) {
          end.out_of_reach = true;
          break;
        }
      }
      if (!end.killed && Clock::now() - *end.terminated_at >= options.kill_after) {
        kill(-group, SIGKILL);
        end.killed = true;
      }
    }
    timespec timeout{0, 20'000'000};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP)
      kill(reaped ? -group : child.pid, signal);  // once the command has ended: what is left of it
  }
  return end;
}

// What became of the command when its lease ended under it.
std::string command_fate(const CommandEnd& end) {
  if (!end.terminated_at || end.ended_first)
    return "the command ended on its own (exit " + std::to_string(exit_code_of(end.status)) +
           ") as it was noticed" + (end.killed ? "; what it left running was killed" : "");
  return end.killed ? "the command was killed" : "the command was terminated";
}

void report_out_of_reach(const CommandEnd& end) {
  if (end.out_of_reach)
    warn(
        "some processes of the command's group could not be signalled (not permitted) and may "
        "still run");
}

}  // namespace

int run(const Globals& globals, const RunOptions& options) {
  if (options.name.empty())
    throw UsageError{"run: NAME must not be empty"};
  if (options.command.empty())
    throw UsageError{"run: no COMMAND given (leasehold run NAME -- COMMAND ...)"};
  if (options.ttl < milliseconds(10))
    throw UsageError{"--ttl: must be at least 10ms"};
  if (options.max_time < milliseconds::zero())
    throw UsageError{"--max-time: must not be negative"};
  set_holder_label(command_label(options.command));      // who holds it, for status and list
  block_forwarded_signals();                             // before the client starts its thread
  const MetricsFile metrics_file(options.metrics_file);  // written at every return below
  Client redis = connect_or_exit(globals, metrics_file.metrics());
  const RwLock<std::string> lock = run_lock(globals, options.ttl);
  std::optional<Semaphore<std::string>> permits;
  if (options.limit)
    permits.emplace(run_semaphore(globals, options.ttl, *options.limit));

  Taken taken = take_lease(globals, options, redis, lock, permits);
  if (!taken.lease)
    return taken.exit_code;
  LeaseGuard& lease = *taken.lease;
  const std::string kind = options.limit ? "one of " + std::to_string(*options.limit) + " permits"
                           : options.shared ? "shared"
                                            : "exclusive";
  chat(globals,
       "took '" + options.name + "' (" + kind + ", ttl " + format_duration(options.ttl) + ")");
  metrics_file.write();

  // The lease is kept while the command runs; a loss is noticed by the wait loop below.
  const KeepAlive& keep_alive = lease.keep_alive();
  const auto release = [&] { lease.release(); };

  std::vector<std::pair<std::string, std::string>> environment = {
      {"LEASEHOLD_NAME", options.name}, {"LEASEHOLD_TOKEN", lease.id().hex()}};
  if (const auto fence = lease.fence())
    environment.emplace_back("LEASEHOLD_FENCE", std::to_string(*fence));

#ifdef PR_SET_CHILD_SUBREAPER
  // On Linux leasehold adopts the orphans of the command (a child subreaper) and reaps them:
  // a zombie still counts as a member of its group, and init may reap it late.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  const Child child = spawn_child(options.command, environment);
  if (child.pid < 0) {
    release();
    return report_spawn_failure(options.command.front(), child.spawn_error);
  }

  const TerminalHandover terminal(child.pid);
  const CommandEnd end = watch_command(child, keep_alive, options);
  // A lost lease is given back only now: one lost because an extension came too late may still
  // stand in Redis, and it then keeps others out while the group stops (releasing a lease that
  // is no longer ours removes nothing).
  release();
  if (keep_alive.lost() && keep_alive.cause() == errc::hold_budget_exceeded) {
    warn("'" + options.name + "': the command ran past --max-time " +
         format_duration(options.max_time) + "; " + command_fate(end) +
         " (the lease is given back)");
    report_out_of_reach(end);
    return kExitTimedOut;
  }
  if (keep_alive.lost()) {
    const std::error_code loss_cause = keep_alive.cause();
    warn("lost the lease on '" + options.name + "' (" +
         (loss_cause ? "could not extend it: " + loss_cause.message()
                     : std::string("it expired or was taken over")) +
         "); " + command_fate(end));
    report_out_of_reach(end);
    return kExitLeaseLost;
  }
  return exit_code_of(end.status);
}

}  // namespace leasehold::cli
