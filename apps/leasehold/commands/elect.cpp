// leasehold elect: its flags, and the action that runs COMMAND only while leading NAME
// (elect.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_elect(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto options = std::make_shared<ElectOptions>();
  CLI::App* command = app.add_subcommand(
      "elect", "stand for leader of the election NAME, and run COMMAND only while leading");
  command->add_option("NAME", options->name, "the election's name");
  command->add_option("COMMAND", options->command, "the command and its arguments (after --)");
  add_duration(*command, "-t,--ttl", options->ttl,
               "the leader's lease TTL, extended every third of it (default: 30s)", invocation);
  command->add_option("--value", options->value,
                      "proclaim this value as the leader's, for `leasehold leader` to show");
  command->add_flag("--rejoin", options->rejoin,
                    "stand again after each term (the leadership lost, or COMMAND ended), and "
                    "run COMMAND again when elected again");
  command->add_option("--status-file", options->status_file,
                      "a file that exists exactly while this process leads (for a readiness "
                      "probe)");
  add_duration(*command, "--kill-after", options->kill_after,
               "on a lost leadership, SIGKILL this long after SIGTERM (default: 5s)", invocation);
  on_parsed(*command, invocation,
            [options, &globals = invocation.globals] { return elect(globals, *options); });
}

}  // namespace leasehold::cli
