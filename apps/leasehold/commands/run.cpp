// leasehold run: its flags, and the action that runs COMMAND under the lease (run.cpp).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "commands/commands.hpp"

namespace leasehold::cli {
namespace {

struct RunFlags {
  RunOptions options;
  bool exclusive = false;  // the default: only there to exclude --shared and --limit
  // The words before "--" (NAME...), or all of them without one (NAME COMMAND...).
  std::vector<std::string> words;
};

// NAME..., COMMAND and --raw-key's COMMAND from the words CLI11 parsed and those after "--".
void sort_words(RunOptions& options, std::vector<std::string> words, const Invocation& invocation) {
  std::vector<std::string> names;
  if (options.raw_key) {
    // No NAME with --raw-key: the first word after it starts COMMAND.
    options.command = std::move(words);
    options.command.insert(options.command.end(), invocation.after_separator.begin(),
                           invocation.after_separator.end());
    return;
  }
  if (invocation.separated) {
    names = std::move(words);
    options.command = invocation.after_separator;
  } else if (!words.empty()) {  // NAME COMMAND...
    names.push_back(words.front());
    options.command.assign(words.begin() + 1, words.end());
  }
  if (!names.empty())
    options.name = names.front();
  for (std::size_t i = 1; i < names.size(); ++i) {
    if (names[i] != options.name && std::find(options.more_names.begin(), options.more_names.end(),
                                              names[i]) == options.more_names.end())
      options.more_names.push_back(names[i]);
  }
}

// How the lease is taken: alone, shared or as one of N; at once or after waiting; and the exit
// code when it is not.
void add_take_flags(CLI::App& command, RunFlags& flags, Invocation& invocation) {
  RunOptions& options = flags.options;
  auto* exclusive =
      command.add_flag("-x,--exclusive", flags.exclusive, "take the lease alone (the default)");
  auto* shared =
      command.add_flag("-s,--shared", options.shared, "share the lease with other --shared runs")
          ->excludes(exclusive);
  command
      .add_option("--limit", options.limit,
                  "let at most N runs hold NAME at once (a counting semaphore, apart from the "
                  "exclusive and shared leases of NAME)")
      ->check(CLI::Range(1, 1'000'000))
      ->excludes(shared)
      ->excludes(exclusive);
  auto* nonblock =
      command.add_flag("-n,--nonblock", options.nonblock, "fail at once if it is held");
  add_duration(command, "-w,--wait", options.wait, "give up after waiting this long", invocation)
      ->excludes(nonblock);
  command
      .add_option("-E,--conflict-exit-code", options.conflict_exit_code,
                  "exit code when the lease could not be taken (default: 1)")
      ->check(CLI::Range(0, 255));
}

}  // namespace

void add_run(CLI::App& app, Invocation& invocation) {
  // Owned by the action, which outlives parsing.
  auto flags = std::make_shared<RunFlags>();
  RunOptions& options = flags->options;
  CLI::App* command = app.add_subcommand(
      "run",
      "run COMMAND while holding the lease NAME (or every NAME at once); release it when COMMAND "
      "ends");
  command
      ->add_option("NAME", flags->words,
                   "the lease's name, or several names before -- (none with --raw-key)")
      ->expected(0, -1);
  command->footer(
      "COMMAND and its arguments come after -- (leasehold run [OPTIONS] NAME... -- COMMAND "
      "[ARG...]); several NAMEs are one exclusive lease, taken all at once.");
  add_raw_key(*command, options.raw_key);
  add_take_flags(*command, *flags, invocation);
  add_duration(*command, "-t,--ttl", options.ttl,
               "the lease's TTL, extended every third of it while COMMAND runs (default: 30s)",
               invocation);
  add_duration(*command, "--kill-after", options.kill_after,
               "on a lost lease, SIGKILL this long after SIGTERM (default: 5s)", invocation);
  add_duration(*command, "--max-time", options.max_time,
               "end COMMAND like a lost lease once it has run this long, and exit 124", invocation);
  command->add_option("--metrics-file", options.metrics_file,
                      "write Prometheus metrics to PATH (atomically) when the lease is taken and "
                      "at the end");
  on_parsed(
      *command, invocation,
      [flags, &invocation] {
        sort_words(flags->options, std::move(flags->words), invocation);
        return run(invocation.globals, flags->options);
      },
      true);
}

}  // namespace leasehold::cli
