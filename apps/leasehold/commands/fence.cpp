// leasehold fence check: its flags, and the action that records a fence for a resource
// (fence.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {

void add_fence(CLI::App& app, Invocation& invocation) {
  CLI::App* fence = app.add_subcommand("fence", "fences checked where the data lives");
  fence->require_subcommand(1);
  // Owned by the action, which outlives parsing.
  auto options = std::make_shared<FenceCheckOptions>();
  CLI::App* check = fence->add_subcommand(
      "check",
      "record FENCE for RESOURCE if no newer one is recorded: exit 0 if it is the newest (or "
      "equal), 1 if it is older");
  check->add_option("RESOURCE", options->resource, "what the fence protects")->required();
  check->add_option("FENCE", options->fence, "a fencing number (LEASEHOLD_FENCE)")->required();
  check->add_flag("--json", options->json, "print JSON");
  on_parsed(*check, invocation,
            [options, &globals = invocation.globals] { return fence_check(globals, *options); });
}

}  // namespace leasehold::cli
