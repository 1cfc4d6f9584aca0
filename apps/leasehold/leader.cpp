// leasehold leader: who leads the election NAME, as text or JSON.
#include <iostream>

#include "cli.hpp"
#include "displayable.hpp"
#include "inspect.hpp"

namespace leasehold::cli {

using std::chrono::milliseconds;

int leader(const Globals& globals, const LeaderOptions& options) {
  if (options.name.empty())
    throw UsageError{"leader: NAME must not be empty"};
  Client redis = connect_or_exit(globals);
  std::optional<Leader> now;
  try {
    now = redis.process(elect_election(globals, milliseconds(1000)).leader(options.name));
  } catch (const Error& e) {
    exit_unavailable(e);
  }
  if (options.json) {
    const Json json = now ? leader_json(*now) : Json{{"leader", nullptr}};
    std::cout << json_text(json) << "\n";
  } else {
    std::cout << (now ? leader_text(*now) : "nobody leads '" + displayable(options.name) + "'")
              << "\n";
  }
  return now ? 0 : kExitNoLeader;
}

}  // namespace leasehold::cli
