// leasehold leader: who leads the election NAME, as text or JSON.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "displayable.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;
using Json = nlohmann::ordered_json;

// How long `leader` has led, by the servers' clock; nothing without its identity.
std::optional<milliseconds> held_for(const Leader& leader) {
  if (!leader.holder)
    return std::nullopt;
  return std::max(milliseconds::zero(), std::chrono::duration_cast<milliseconds>(
                                            server_clock_now() - leader.holder->taken_at));
}

// "term 7: web-3, pid 4121, "scheduler --eu", for 12 s; value "10.0.0.7:8080"; 18 s left".
// Everything another client wrote is shown through displayable().
std::string leader_text(const Leader& leader) {
  std::string text = "term " + std::to_string(leader.term) + ": ";
  if (leader.holder)
    text += displayable(leader.holder->host) + ", pid " + std::to_string(leader.holder->pid) +
            ", \"" + displayable(leader.holder->label) + "\", for " +
            format_duration(*held_for(leader));
  else
    text += displayable(leader.id_prefix) + "\xe2\x80\xa6";
  if (leader.value)
    text += "; value \"" + displayable(*leader.value) + "\"";
  return text + "; " + format_duration(leader.time_left) + " left";
}

// {"host", "pid", "label", "value", "term", "held_ms"}: null where the leader did not say.
Json leader_json(const Leader& leader) {
  Json json;
  json["host"] = leader.holder ? Json(leader.holder->host) : Json(nullptr);
  json["pid"] = leader.holder ? Json(leader.holder->pid) : Json(nullptr);
  json["label"] = leader.holder ? Json(leader.holder->label) : Json(nullptr);
  json["value"] = leader.value ? Json(*leader.value) : Json(nullptr);
  json["term"] = leader.term;
  const auto held = held_for(leader);
  json["held_ms"] = held ? Json(held->count()) : Json(nullptr);
  return json;
}

}  // namespace

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
    std::cout << json.dump(-1, ' ', true, Json::error_handler_t::replace) << "\n";
  } else {
    std::cout << (now ? leader_text(*now) : "nobody leads '" + displayable(options.name) + "'")
              << "\n";
  }
  return now ? 0 : kExitNoLeader;
}

}  // namespace leasehold::cli
