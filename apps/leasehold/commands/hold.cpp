// leasehold hold: the flags of acquire and --max-time, and the action that takes a lease, prints
// its token and keeps it until a signal or the end of stdin (split.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_hold(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<AcquireFlags>();
  CLI::App* command = add_acquire_command(
      app, "hold",
      "take the lease NAME, print its token and keep it until SIGTERM, SIGINT or the end of "
      "stdin; exit 75 if it is lost",
      *flags, invocation);
  add_duration(*command, "--max-time", flags->options.max_time,
               "give it back once held this long, and exit 124", invocation);
  on_parsed(*command, invocation,
            [flags, &globals = invocation.globals] { return hold(globals, flags->with_format()); });
}

}  // namespace leasehold::cli
