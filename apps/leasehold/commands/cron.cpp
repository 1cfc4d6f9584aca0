// leasehold cron: its flags, and the action that runs COMMAND once per interval across hosts
// (cron_command.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {
namespace {

struct CronFlags {
  CronOptions options;
  long long ticks = 0;  // 0: not given
};

}  // namespace

void add_cron(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<CronFlags>();
  CronOptions& options = flags->options;
  CLI::App* command = app.add_subcommand(
      "cron",
      "run COMMAND at startup and then every interval, at most once per interval "
      "across every host running the same NAME");
  command->add_option("NAME", options.name, "the job's name")->required();
  command->add_option("COMMAND", options.command, "the command and its arguments (after --)")
      ->required();
  add_duration(*command, "--every", options.every, "the interval", invocation)->required();
  add_duration(*command, "--lease", options.lease,
               "the lease taken at each tick, never released; shorter than the interval "
               "(default: the interval minus 10%, at least 1 s less)",
               invocation);
  command->add_option("--mode", options.mode, "at-least (default), after-finish or after-start")
      ->check(CLI::IsMember({"at-least", "after-finish", "after-start"}));
  command->add_flag("--aligned", options.aligned,
                    "name each interval by the Redis server's clock (immune to host clock skew)");
  command->add_option("--ticks", flags->ticks, "stop after N ticks")->check(CLI::PositiveNumber);
  add_duration(*command, "--max-time", options.max_time,
               "stop a run (SIGTERM, then SIGKILL) once it has run this long", invocation);
  add_duration(*command, "--kill-after", options.kill_after,
               "SIGKILL a run this long after the SIGTERM that stops it (default: 5s)", invocation);
  command->add_option("--metrics-file", options.metrics_file,
                      "write Prometheus metrics to PATH (atomically) after every tick");
  on_parsed(*command, invocation, [flags, &globals = invocation.globals] {
    if (flags->ticks > 0)
      flags->options.ticks = flags->ticks;
    return cron(globals, flags->options);
  });
}

}  // namespace leasehold::cli
