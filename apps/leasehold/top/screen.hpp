// leasehold top's live view: the table in the terminal (curses), refreshed until 'q' or a signal.
#pragma once

#include "cli.hpp"

namespace leasehold::cli::top_parts {

// Needs a terminal on stdin and stdout (else UsageError); ends on 'q', SIGINT, SIGTERM or SIGHUP,
// the terminal restored.
int live_view(const Globals& globals, const TopOptions& options);

}  // namespace leasehold::cli::top_parts
