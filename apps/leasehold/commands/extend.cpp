// leasehold extend: its flags, and the action that restarts the TTL of the lease of a token
// (split.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_extend(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto options = std::make_shared<TokenOptions>();
  CLI::App* command = app.add_subcommand(
      "extend",
      "restart the TTL of the lease of a token; exit with the conflict code if it is gone");
  command->add_option("NAME", options->name, "the lease's name (none with --raw-key)");
  add_raw_key(*command, options->raw_key);
  add_token_flags(*command, *options);
  add_duration(*command, "-t,--ttl", options->ttl, "the lease's new TTL (default: 30s)",
               invocation);
  on_parsed(*command, invocation,
            [options, &globals = invocation.globals] { return extend_token(globals, *options); });
}

}  // namespace leasehold::cli
