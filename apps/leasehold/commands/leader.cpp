// leasehold leader: its flags, and the action that shows who leads NAME (leader.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_leader(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto options = std::make_shared<LeaderOptions>();
  CLI::App* command =
      app.add_subcommand("leader", "show who leads the election NAME (exit 3 when nobody does)");
  command->add_option("NAME", options->name, "the election's name")->required();
  command->add_flag("--json", options->json, "print JSON");
  command->add_flag("--watch", options->watch,
                    "print a line now and one per change, until SIGINT or SIGTERM (exit 0)");
  on_parsed(*command, invocation,
            [options, &globals = invocation.globals] { return leader(globals, *options); });
}

}  // namespace leasehold::cli
