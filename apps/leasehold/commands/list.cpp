// leasehold list: its flags, and the action that lists every lease under the prefix
// (inspect.cpp).
#include <memory>
#include <string>

#include "commands/commands.hpp"

namespace leasehold::cli {
namespace {

struct ListFlags {
  std::string pattern;
  bool json = false;
};

}  // namespace

void add_list(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<ListFlags>();
  CLI::App* command = app.add_subcommand("list", "list every lease under the prefix");
  command->add_option("PATTERN", flags->pattern, "only names matching this glob");
  command->add_flag("--json", flags->json, "print JSON");
  on_parsed(*command, invocation, [flags, &globals = invocation.globals] {
    return list(globals, flags->pattern, flags->json);
  });
}

}  // namespace leasehold::cli
