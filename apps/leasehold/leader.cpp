// leasehold leader: who leads the election NAME, as text or JSON; with --watch, each change.
#include <signal.h>

#include <iostream>
#include <stop_token>

#include "cli.hpp"
#include "displayable.hpp"
#include "inspect.hpp"
#include "signal_thread.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

void print(const LeaderOptions& options, const std::optional<Leader>& now) {
  if (options.json) {
    const Json json = now ? leader_json(*now) : Json{{"leader", nullptr}};
    std::cout << json_text(json) << "\n";
  } else {
    std::cout << (now ? leader_text(*now) : "nobody leads '" + displayable(options.name) + "'")
              << "\n";
  }
  std::cout.flush();  // a line per change, as it comes, for a pipe too
}

// One line now, then one per change, until SIGINT or SIGTERM.
int watch(const Globals& globals, const LeaderOptions& options) {
  block_forwarded_signals();  // before the client starts its thread
  Client redis = connect_or_exit(globals);
  std::stop_source stop;
  const SignalThread signals([&](int signal) {
    if (signal != SIGHUP)
      stop.request_stop();
  });
  try {
    Watch leaders(redis, elect_election(globals, milliseconds(1000)).observe(options.name));
    while (const auto now = leaders.next(Clock::time_point::max(), stop.get_token()))
      print(options, *now);
  } catch (const Error& e) {
    exit_failure(globals, redis, options.name, e);  // a key of another type: which one
  }
  return 0;
}

}  // namespace

int leader(const Globals& globals, const LeaderOptions& options) {
  if (options.name.empty())
    throw UsageError{"leader: NAME must not be empty"};
  if (options.watch)
    return watch(globals, options);
  Client redis = connect_or_exit(globals);
  std::optional<Leader> now;
  try {
    now = redis.process(elect_election(globals, milliseconds(1000)).leader(options.name));
  } catch (const Error& e) {
    exit_unavailable(e);
  }
  print(options, now);
  return now ? 0 : kExitNoLeader;
}

}  // namespace leasehold::cli
