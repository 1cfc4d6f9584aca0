// One function per subcommand, each in its own file: it registers the subcommand on `app` with
// its flags, and its action (Invocation::action), which runs the subcommand's logic.
#pragma once

#include <CLI/CLI.hpp>

#include "flags.hpp"

namespace leasehold::cli {

void add_run(CLI::App& app, Invocation& invocation);
void add_cron(CLI::App& app, Invocation& invocation);
void add_status(CLI::App& app, Invocation& invocation);
void add_list(CLI::App& app, Invocation& invocation);
void add_release(CLI::App& app, Invocation& invocation);
void add_acquire(CLI::App& app, Invocation& invocation);
void add_hold(CLI::App& app, Invocation& invocation);
void add_extend(CLI::App& app, Invocation& invocation);
void add_top(CLI::App& app, Invocation& invocation);
void add_doctor(CLI::App& app, Invocation& invocation);
void add_elect(CLI::App& app, Invocation& invocation);
void add_leader(CLI::App& app, Invocation& invocation);
void add_fence(CLI::App& app, Invocation& invocation);

}  // namespace leasehold::cli
