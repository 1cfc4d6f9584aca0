// What the subcommands' flag declarations (commands/) share: the invocation they fill in while
// CLI11 parses, duration flags, --raw-key, the flags acquire and hold share, and the token flags
// of extend and release.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "cli.hpp"

namespace leasehold::cli {

// What a command line asks for, filled in while CLI11 parses it.
struct Invocation {
  Globals globals;
  // The parsed subcommand's action: it runs the subcommand and yields its exit code.
  std::function<int()> action;
  // The first flag value refused while parsing (a bad duration). It is reported once CLI11 is
  // done, so that --help, CLI11's own usage errors and --verbose with --quiet take precedence.
  std::optional<UsageError> refused;
  // The words after the first "--" of the command line, and whether there was one. A subcommand
  // that takes them as its COMMAND, unparsed, while its positionals before "--" are names (run),
  // sets takes_words_after_separator: the words before "--" are then parsed alone (main.cpp).
  bool separated = false;
  std::vector<std::string> after_separator;
  bool takes_words_after_separator = false;
};

// Makes `action` the invocation's action when CLI11 parses `command`; with
// `takes_words_after_separator`, the words after "--" are the action's
// (Invocation::after_separator).
void on_parsed(CLI::App& command, Invocation& invocation, std::function<int()> action,
               bool takes_words_after_separator = false);

// A duration flag (250ms, 30s, 1.5s, 5m, 1h), parsed into `target` while CLI11 parses; `target`
// keeps its default when the flag is not given. A bad value becomes the invocation's `refused`.
CLI::Option* add_duration(CLI::App& command, const std::string& names,
                          std::chrono::milliseconds& target, const std::string& help,
                          Invocation& invocation);
CLI::Option* add_duration(CLI::App& command, const std::string& names,
                          std::optional<std::chrono::milliseconds>& target, const std::string& help,
                          Invocation& invocation);

// --raw-key KEY: another client's lock on exactly KEY (docs/interop.md).
CLI::Option* add_raw_key(CLI::App& command, std::optional<std::string>& key);

// What acquire and hold take, from the flags they share.
struct AcquireFlags {
  AcquireOptions options;
  bool json = false;
  bool env = false;

  // `options`, with the token format that --json or --env asks for.
  AcquireOptions with_format() const;
};
// The subcommand `name` with the flags acquire and hold share.
CLI::App* add_acquire_command(CLI::App& app, const char* name, const char* description,
                              AcquireFlags& flags, Invocation& invocation);

// -E and --token, which extend and release share; --token defaults to $LEASEHOLD_TOKEN. Returns
// the --token option.
CLI::Option* add_token_flags(CLI::App& command, TokenOptions& options);

}  // namespace leasehold::cli
