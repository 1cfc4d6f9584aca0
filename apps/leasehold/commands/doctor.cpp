// leasehold doctor: its flags, and the action that checks whether the Redis of --redis is fit
// for leases (doctor/).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_doctor(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "doctor", "check whether the Redis server (or cluster) of --redis is fit for leases");
  command->add_flag("--json", *json, "print JSON");
  on_parsed(*command, invocation,
            [json, &globals = invocation.globals] { return doctor(globals, *json); });
}

}  // namespace leasehold::cli
