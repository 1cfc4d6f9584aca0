// leasehold status: its flags, and the action that shows who holds the leases of NAMEs or raw
// keys (inspect.cpp).
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.hpp"

namespace leasehold::cli {
namespace {

struct StatusFlags {
  std::vector<std::string> names;
  std::vector<std::string> raw_keys;
  bool json = false;
};

}  // namespace

void add_status(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* command =
      app.add_subcommand("status", "show who holds the leases NAME..., and for how long");
  command->add_option("NAME", flags->names, "run or cron names");
  command->add_option("--raw-key", flags->raw_keys,
                      "instead of NAMEs, the lock on exactly KEY (other clients' locks)");
  command->add_flag("--json", flags->json, "print JSON");
  on_parsed(*command, invocation, [flags, &globals = invocation.globals] {
    if (!flags->raw_keys.empty() && !flags->names.empty())
      throw UsageError{"status: give NAMEs or --raw-key KEYs, not both"};
    if (!flags->raw_keys.empty())
      return raw_key_status(globals, flags->raw_keys, flags->json);
    return status(globals, flags->names, flags->json);
  });
}

}  // namespace leasehold::cli
