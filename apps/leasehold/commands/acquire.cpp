// leasehold acquire: its flags (those it shares with hold), and the action that takes a lease,
// prints its token and leaves it to its TTL (split.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_acquire(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<AcquireFlags>();
  CLI::App* command = add_acquire_command(
      app, "acquire",
      "take the lease NAME, print its token and leave it to its TTL (extend and release it by "
      "the token)",
      *flags, invocation);
  on_parsed(*command, invocation, [flags, &globals = invocation.globals] {
    return acquire(globals, flags->with_format());
  });
}

}  // namespace leasehold::cli
