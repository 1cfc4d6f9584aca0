// A command must not outlive the leasehold that holds its lease: killed (SIGKILL, the OOM
// killer), leasehold can neither extend the lease nor stop the command, and the lease runs out
// while the command still works. A watchdog — a small process forked next to each command —
// notices leasehold's end (its socket closes) and stops the command's group as a lost lease would:
// SIGTERM at once, SIGKILL after --kill-after.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace leasehold::cli {

struct Watchdog {
  pid_t pid = -1;
  int socket = -1;  // leasehold's end; closing it without a word is leasehold's end
};

// Starts a watchdog, before its command is spawned: a fork of a large process takes long, and
// leasehold could be killed meanwhile with its command already running. On failure (fork,
// socketpair) it returns a Watchdog without a pid: the command then runs unwatched.
Watchdog start_watchdog(std::chrono::milliseconds kill_after);
// Tells the watchdog the process group to stop: called by the command's own process after the fork,
// before its exec (async-signal-safe), so the watchdog knows the group before the command runs.
void tell_group(const Watchdog& watchdog, pid_t group);

// Tells the watchdog its command is done, and reaps it. Leaves the group alone.
void dismiss(Watchdog& watchdog);

}  // namespace leasehold::cli
