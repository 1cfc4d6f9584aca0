// The flags the subcommands share (flags.hpp), parsed while CLI11 parses.
#include "flags.hpp"

#include <cstdlib>
#include <utility>

namespace leasehold::cli {
namespace {

template <class Target>
CLI::Option* add_duration_to(CLI::App& command, const std::string& names, Target& target,
                             const std::string& help, Invocation& invocation) {
  // Messages name the flag by its long name: "--ttl" of "-t,--ttl".
  const std::string flag = names.substr(names.rfind(',') + 1);
  return command.add_option_function<std::string>(
      names,
      [flag, &target, &invocation](const std::string& text) {
        try {
          target = require_duration(flag, text);
        } catch (UsageError& refused) {
          if (!invocation.refused)
            invocation.refused = std::move(refused);
        }
      },
      help + " (250ms, 30s, 1.5s, 5m, 1h)");
}

}  // namespace

void on_parsed(CLI::App& command, Invocation& invocation, std::function<int()> action,
               bool takes_words_after_separator) {
  command.callback([&invocation, action = std::move(action), takes_words_after_separator] {
    invocation.action = action;
    invocation.takes_words_after_separator = takes_words_after_separator;
  });
}

CLI::Option* add_duration(CLI::App& command, const std::string& names,
                          std::chrono::milliseconds& target, const std::string& help,
                          Invocation& invocation) {
  return add_duration_to(command, names, target, help, invocation);
}

CLI::Option* add_duration(CLI::App& command, const std::string& names,
                          std::optional<std::chrono::milliseconds>& target, const std::string& help,
                          Invocation& invocation) {
  return add_duration_to(command, names, target, help, invocation);
}

CLI::Option* add_raw_key(CLI::App& command, std::optional<std::string>& key) {
  return command.add_option("--raw-key", key,
                            "instead of NAME, the lock on exactly KEY as other clients take it "
                            "(redis-py, node-redlock: SET NX PX with a random value)");
}

AcquireOptions AcquireFlags::with_format() const {
  AcquireOptions formatted = options;
  formatted.format = json ? TokenFormat::json : env ? TokenFormat::env : TokenFormat::plain;
  return formatted;
}

CLI::App* add_acquire_command(CLI::App& app, const char* name, const char* description,
                              AcquireFlags& flags, Invocation& invocation) {
  AcquireOptions& options = flags.options;
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("NAME", options.name, "the lease's name (none with --raw-key)");
  add_raw_key(*command, options.raw_key);
  command->add_flag("-s,--shared", options.shared, "a shared lease (with other --shared ones)");
  auto* nonblock =
      command->add_flag("-n,--nonblock", options.nonblock, "fail at once if it is held");
  add_duration(*command, "-w,--wait", options.wait, "give up after waiting this long", invocation)
      ->excludes(nonblock);
  add_duration(*command, "-t,--ttl", options.ttl, "the lease's TTL (default: 30s)", invocation);
  command
      ->add_option("-E,--conflict-exit-code", options.conflict_exit_code,
                   "exit code when the lease could not be taken (default: 1)")
      ->check(CLI::Range(0, 255));
  auto* json = command->add_flag("--json", flags.json, "print the token as JSON");
  command->add_flag("--env", flags.env, "print shell exports of LEASEHOLD_TOKEN and LEASEHOLD_NAME")
      ->excludes(json);
  return command;
}

CLI::Option* add_token_flags(CLI::App& command, TokenOptions& options) {
  if (const char* env = std::getenv("LEASEHOLD_TOKEN"))
    options.token = env;
  command
      .add_option("-E,--conflict-exit-code", options.conflict_exit_code,
                  "exit code when the token no longer holds the lease (default: 1)")
      ->check(CLI::Range(0, 255));
  return command.add_option("--token", options.token,
                            "the token `leasehold acquire` printed (default: $LEASEHOLD_TOKEN)");
}

}  // namespace leasehold::cli
