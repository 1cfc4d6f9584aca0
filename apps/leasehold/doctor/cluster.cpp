// leasehold doctor on a cluster: the cluster's state, and each master checked as a server of its
// own (with the slots it serves), their findings merged into one list.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

struct Master {
  RedisUrl::Endpoint endpoint;
  std::vector<SlotRange> ranges;
};

// CLUSTER SLOTS: [[first, last, [host, port, id], replicas...], ...], by master. Nothing, with
// the reason in `why`, when it is refused.
std::optional<std::vector<Master>> cluster_masters(Client& redis, std::string& why) {
  const Reply slots = ask(redis, {"CLUSTER", "SLOTS"});
  if (slots.is_error()) {
    why = refusal("CLUSTER SLOTS", slots, url_user(redis.url()));
    return std::nullopt;
  }
  std::vector<Master> masters;
  for (const Reply& range : slots.elements) {
    const Reply& master = range.elements.at(2);
    RedisUrl::Endpoint endpoint{master.elements.at(0).str,
                                static_cast<std::uint16_t>(master.elements.at(1).integer)};
    if (endpoint.host.empty())
      endpoint.host = redis.url().host;
    auto known = std::find_if(masters.begin(), masters.end(),
                              [&](const Master& m) { return m.endpoint == endpoint; });
    if (known == masters.end())
      known = masters.insert(masters.end(), Master{endpoint, {}});
    known->ranges.push_back({range.elements.at(0).integer, range.elements.at(1).integer});
  }
  return masters;
}

// The findings of several nodes as one list: a check that says the same on every node once,
// one that differs once per node, with the node's address in front.
std::vector<Finding> merge_nodes(
    const std::vector<std::pair<std::string, std::vector<Finding>>>& nodes) {
  std::vector<std::string> checks;
  for (const auto& [address, findings] : nodes)
    for (const Finding& finding : findings)
      if (std::find(checks.begin(), checks.end(), finding.check) == checks.end())
        checks.push_back(finding.check);
  std::vector<Finding> merged;
  for (const std::string& check : checks) {
    std::vector<std::pair<std::string, Finding>> found;
    for (const auto& [address, findings] : nodes)
      for (const Finding& finding : findings)
        if (finding.check == check)
          found.emplace_back(address, finding);
    const bool same = found.size() == nodes.size() &&
                      std::all_of(found.begin(), found.end(), [&](const auto& each) {
                        return each.second.message == found.front().second.message;
                      });
    if (same) {
      merged.push_back(found.front().second);
      continue;
    }
    for (auto& [address, finding] : found)
      merged.push_back({finding.check, finding.level, address + ": " + finding.message});
  }
  return merged;
}

}  // namespace

Finding cluster_finding(Client& node, const ServerFacts& facts) {
  const Reply reply = ask(node, {"CLUSTER", "INFO"});
  if (reply.is_error()) {
    return {"cluster", Level::warning,
            "cluster: could not be checked (" + refusal("CLUSTER INFO", reply, facts.user) + ")"};
  }
  const auto fields = parse_fields(reply.str);
  const std::string state = fields.count("cluster_state") ? fields.at("cluster_state") : "?";
  const std::string assigned =
      fields.count("cluster_slots_assigned") ? fields.at("cluster_slots_assigned") : "?";
  if (state == "ok" && assigned == "16384")
    return {"cluster", Level::ok, "cluster: state ok, all 16384 slots assigned"};
  std::string message =
      "cluster: cluster_state is " + state + " and " + assigned + " of 16384 slots are assigned: ";
  if (assigned != "16384")
    message += "no lease can be taken on a name whose key falls in an unassigned slot, ";
  message +=
      "and a cluster that is down refuses every lease; assign every slot and check the nodes "
      "(redis-cli --cluster fix HOST:PORT, redis-cli --cluster check HOST:PORT)";
  return {"cluster", Level::problem, message};
}

std::vector<Finding> check_cluster(const Globals& globals, Client& redis) {
  std::string why;
  const std::optional<std::vector<Master>> masters = cluster_masters(redis, why);
  if (!masters) {
    // Without the slot map, the cluster client itself is checked: it routes each key to its
    // master, and sends the other commands to the masters in turn.
    Target target{redis, redis.url(), true, {}};
    std::vector<Finding> findings = check_server(globals, target);
    findings.push_back({"masters", Level::warning,
                        "masters: only some were checked (" + why +
                            "); run doctor against each master to check them all"});
    return findings;
  }
  if (masters->empty()) {
    return {{"cluster", Level::problem,
             "cluster: no master serves any slot: no lease can be taken; assign the slots "
             "(redis-cli --cluster fix HOST:PORT)"}};
  }
  ClientOptions options = redis.options();
  options.warn_on_eviction_policy = false;  // doctor says it itself
  std::vector<std::pair<std::string, std::vector<Finding>>> nodes;
  for (const Master& master : *masters) {
    const RedisUrl url = redis.url().node(master.endpoint);
    Client node(url, options);
    Target target{node, url, true, master.ranges};
    nodes.emplace_back(master.endpoint.address(), check_server(globals, target));
  }
  return merge_nodes(nodes);
}

}  // namespace leasehold::cli::doctor_detail
