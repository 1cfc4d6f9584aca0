// leasehold doctor: whether a Redis server (or a cluster) is fit for leases, and what to change.
// Each check gives one finding (ok, warning or problem) in one line with what to do; a check
// that the server refuses is a finding too, never a failure of doctor itself. This file runs the
// checks of one server in order, and the command; each area's checks are in a file of its own.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "doctor/doctor.hpp"

namespace leasehold::cli {
namespace doctor_detail {
namespace {

// A key and channel name under the prefix, of 16 random hex digits; with `ranges`, one whose
// slot is in them (a cluster node serves only its own).
std::optional<std::string> scratch_name(const std::string& prefix,
                                        const std::vector<SlotRange>& ranges) {
  std::random_device seed;
  std::mt19937_64 random(seed());
  for (int attempt = 0; attempt < 100'000; ++attempt) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random()));
    std::string name = prefix + ":doctor:" + hex;
    const long long slot = key_slot(name);
    if (ranges.empty() || std::any_of(ranges.begin(), ranges.end(), [&](const SlotRange& r) {
          return r.first <= slot && slot <= r.last;
        }))
      return name;
  }
  return std::nullopt;  // a prefix with a hash tag pins every name to one slot
}

Finding not_probed(const std::string& why) {
  return {"permissions", Level::warning, "permissions: not checked: " + why};
}

}  // namespace

std::vector<Finding> check_server(const Globals& globals, const Target& target) {
  const ServerFacts facts = read_facts(target.client, target.url);
  std::vector<Finding> findings{version_finding(facts)};
  // Keys sent where they do not belong would be refused for that, not for the ACL.
  std::string skip_probes;
  if (target.in_cluster || field(facts, "cluster_enabled") == "1") {
    if (!target.in_cluster) {
      findings.push_back({"url", Level::problem,
                          "url: the server is a Redis Cluster node and the URL is not a "
                          "cluster's: use redis-cluster://HOST:PORT, so that each key goes to "
                          "the master of its slot"});
      skip_probes = "the URL is not a cluster's";
    }
    findings.push_back(cluster_finding(target.client, facts));
    if (findings.back().level == Level::problem)
      skip_probes = "the cluster is not ok (see the cluster finding)";
  }
  if (field(facts, "role") == "slave")
    skip_probes = "the server is a replica";
  const auto scratch = scratch_name(globals.prefix, target.ranges);
  if (!skip_probes.empty())
    findings.push_back(not_probed(skip_probes));
  else if (!scratch)
    findings.push_back(not_probed("no scratch key under the prefix falls in this node's slots"));
  else
    for (Finding& finding : permission_findings(target.client, target.url, facts.user,
                                                globals.prefix, *scratch, facts.redis6_mode))
      findings.push_back(std::move(finding));
  findings.push_back(scripts_finding(target.client, facts));
  findings.push_back(wait_finding(target.client, facts));
  findings.push_back(eviction_finding(target.client, facts));
  findings.push_back(persistence_finding(target.client, facts));
  findings.push_back(replicas_finding(facts, target.client.options(),
                                      target.url.transport == RedisUrl::Transport::sentinel));
  findings.push_back(clock_finding(target.client, facts));
  findings.push_back(round_trip_finding(target.client, facts));
  return findings;
}

}  // namespace doctor_detail

int doctor(const Globals& globals, bool json) {
  using namespace doctor_detail;
  // The client's own eviction warning would say what the maxmemory-policy finding says.
  set_log_handler([](LogLevel, std::string_view) {});
  Client redis = connect_or_exit(globals);
  try {
    std::vector<Finding> findings;
    if (redis.url().transport == RedisUrl::Transport::cluster) {
      findings = check_cluster(globals, redis);
    } else {
      Target target{redis, redis.url(), false, {}};
      findings = check_server(globals, target);
      if (redis.url().transport == RedisUrl::Transport::sentinel)
        for (Finding& finding : sentinel_findings(redis, redis.url()))
          findings.push_back(std::move(finding));
    }
    print_findings(redis.url().address(), findings, json);
    const bool problem = std::any_of(findings.begin(), findings.end(),
                                     [](const Finding& f) { return f.level == Level::problem; });
    return problem ? 1 : 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  } catch (const std::exception& e) {
    // A reply of another shape than Redis gives (a proxy, another server): not a usable Redis.
    exit_unavailable(std::runtime_error(std::string("unexpected reply: ") + e.what()));
  }
}

}  // namespace leasehold::cli
