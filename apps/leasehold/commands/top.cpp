// leasehold top: its flags, and the action that shows every lease under the prefix, live or once
// (top/).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_top(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto options = std::make_shared<TopOptions>();
  CLI::App* command = app.add_subcommand(
      "top", "a live view of every lease under the prefix: holder, time left, readers, waiters");
  command->add_option("PATTERN", options->pattern, "only names matching this glob");
  add_duration(*command, "--interval", options->interval, "refresh every DUR (default: 1s)",
               invocation);
  command
      ->add_option("--sort", options->sort,
                   "name (default), left (least time left first) or held (longest held first)")
      ->check(CLI::IsMember({"name", "left", "held"}));
  command->add_flag("--once", options->once,
                    "print one plain-text table and exit (no terminal needed)");
  command->add_flag("--json", options->json, "print one JSON array of the leases and exit");
  on_parsed(*command, invocation,
            [options, &globals = invocation.globals] { return top(globals, *options); });
}

}  // namespace leasehold::cli
