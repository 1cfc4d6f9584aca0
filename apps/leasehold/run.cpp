// leasehold run: a distributed flock(1). Runs COMMAND while holding the lease NAME.
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <unistd.h>

#include <cerrno>

#include "cli.hpp"
#include "supervise.hpp"

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

}  // namespace

int run(const Globals& globals, const RunOptions& options) {
  validate(options, "run");
  if (options.command.empty())
    throw UsageError{options.raw_key
                         ? "run: no COMMAND given (leasehold run --raw-key KEY -- COMMAND ...)"
                         : "run: no COMMAND given (leasehold run NAME -- COMMAND ...)"};
  if (options.max_time < milliseconds::zero())
    throw UsageError{"--max-time: must not be negative"};
  if (!options.raw_key)
    set_holder_label(command_label(options.command));    // who holds it, for status and list
  block_forwarded_signals();                             // before the client starts its thread
  const MetricsFile metrics_file(options.metrics_file);  // written at every return below
  Client redis = connect_or_exit(globals, metrics_file.metrics());

  Taken taken = take_lease(globals, options, redis);
  if (!taken.lease)
    return taken.exit_code;
  const std::string name = lease_name(options);
  chat(globals, "took '" + name + "' (" + taken.lease->kind(options) + ", ttl " +
                    format_duration(options.ttl) + ")");
  std::vector<std::pair<std::string, std::string>> environment = {
      {"LEASEHOLD_NAME", name}, {"LEASEHOLD_TOKEN", taken.lease->token()}};
  if (!taken.lease->fences.empty()) {
    // Several names: the first one's fence, and every name=fence pair.
    std::string fences;
    for (const auto& [each, fence] : taken.lease->fences)
      fences += (fences.empty() ? "" : " ") + each + "=" + std::to_string(fence);
    environment.emplace_back("LEASEHOLD_FENCE", std::to_string(taken.lease->fences.front().second));
    environment.emplace_back("LEASEHOLD_FENCES", fences);
  } else if (const auto fence = taken.lease->fence()) {
    environment.emplace_back("LEASEHOLD_FENCE", std::to_string(*fence));
  }
  // --max-time is the command's budget (supervise()): the lease is kept until its group is gone.
  LeaseGuard lease = std::move(*taken.lease).guard(redis, milliseconds::zero());
  metrics_file.write();

  // The lease is kept while the command runs; a loss is noticed by the wait loop below.
  const KeepAlive& keep_alive = lease.keep_alive();
  const auto release = [&] { lease.release(); };

#ifdef PR_SET_CHILD_SUBREAPER
  // On Linux leasehold adopts the orphans of the command (a child subreaper) and reaps them:
  // a zombie still counts as a member of its group, and init may reap it late.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  Child child = spawn_child(options.command, environment, options.kill_after);
  if (child.pid < 0) {
    release();
    return report_spawn_failure(options.command.front(), child.spawn_error);
  }

  const TerminalHandover terminal(child.pid);
  const CommandEnd end = supervise(child, {.max_time = options.max_time,
                                           .kill_after = options.kill_after,
                                           .lost = [&] { return keep_alive.lost(); },
                                           .forward_signals = true,
                                           .reaps_orphans = true});
  // A lost lease is given back only now: one lost because an extension came too late may still
  // stand in Redis, and it then keeps others out while the group stops (releasing a lease that
  // is no longer ours removes nothing).
  release();
  if (end.stopped == StopCause::max_time) {
    warn("'" + name + "': the command ran past --max-time " + format_duration(options.max_time) +
         "; " + command_fate(end) + " (the lease is given back)");
    report_out_of_reach(end);
    return kExitTimedOut;
  }
  if (end.stopped == StopCause::lost) {
    warn("lost the lease on '" + name + "' (" + loss_reason(keep_alive.cause()) + "); " +
         command_fate(end));
    report_out_of_reach(end);
    return kExitLeaseLost;
  }
  return exit_code_of(end.status);
}

}  // namespace leasehold::cli
