// leasehold release: its flags, and the action that gives back the lease of a token or deletes a
// lease whoever holds it (split.cpp, inspect.cpp).
#include <memory>

#include "commands/commands.hpp"

namespace leasehold::cli {
namespace {

struct ReleaseFlags {
  TokenOptions options;
  bool force = false;
};

// By the token, or (--force) whoever holds it.
int release_by_flags(const Globals& globals, const ReleaseFlags& flags) {
  const TokenOptions& options = flags.options;
  if (flags.force) {
    if (options.raw_key && !options.name.empty())
      throw UsageError{"release: give NAME or --raw-key KEY, not both"};
    return options.raw_key ? release_raw_key_force(globals, *options.raw_key)
                           : release_force(globals, options.name);
  }
  if (options.token.empty())
    throw UsageError{
        "release: give --token T (or set LEASEHOLD_TOKEN) to give back your lease, or "
        "--force to delete it whoever holds it"};
  return release_token(globals, options);
}

}  // namespace

void add_release(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<ReleaseFlags>();
  TokenOptions& options = flags->options;
  CLI::App* command = app.add_subcommand(
      "release",
      "give back the lease of a token (--token), or delete a lease whoever holds it (--force)");
  command->add_option("NAME", options.name, "the lease's name (none with --raw-key)");
  add_raw_key(*command, options.raw_key);
  auto* token = add_token_flags(*command, options);
  command
      ->add_flag("--force", flags->force, "an operator's tool: delete it regardless of its holder")
      ->excludes(token);
  on_parsed(*command, invocation,
            [flags, &globals = invocation.globals] { return release_by_flags(globals, *flags); });
}

}  // namespace leasehold::cli
