// leasehold doctor: whether a Redis server (or a cluster) is fit for leases, and what to change.
// Each check gives one finding (ok, warning or problem) in one line with what to do; a check
// that the server refuses is a finding too, never a failure of doctor itself. The permission
// checks are in doctor_permissions.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli.hpp"
#include "doctor.hpp"

namespace leasehold::cli {
namespace doctor_detail {
namespace {

// ask()'s query: every reply, an error reply too, is its result.
class Ask {
 public:
  using result_type = Reply;
  explicit Ask(const std::vector<std::string>& args)
      : request_(Request::command(std::span<const std::string>(args))) {}
  const Request& request() const noexcept { return request_; }
  Result<Reply> parse(Reply reply, const Timing&) const { return reply; }

 private:
  Request request_;
};

}  // namespace

Reply ask(Client& client, const std::vector<std::string>& args) {
  return client.process(Ask(args));
}

bool is_noperm(const Reply& reply) {
  return reply.is_error() && reply.str.starts_with("NOPERM");
}

std::string quoted(const std::string& user) {
  return "'" + user + "'";
}

std::string first_sentence(const std::string& text) {
  const auto stop = text.find(". ");
  std::string sentence = text.substr(0, stop);
  if (!sentence.empty() && sentence.back() == '.')
    sentence.pop_back();
  return sentence;
}

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

std::string_view level_name(Level level) {
  switch (level) {
    case Level::ok:
      return "ok";
    case Level::warning:
      return "warning";
    case Level::problem:
      return "problem";
  }
  return "problem";
}

// "key:value" lines of INFO or CLUSTER INFO; section headers and blank lines skipped.
std::map<std::string, std::string> parse_fields(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    const auto colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string::npos)
      continue;
    fields[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return fields;
}

// What one server says of itself, read once for the checks that need it.
struct ServerFacts {
  std::string user;                         // the ACL user doctor runs as
  std::map<std::string, std::string> info;  // INFO's default sections; empty if refused
  std::string info_refusal;                 // why INFO gave nothing
};

// Why a command gave no answer: "INFO is not permitted to user 'app'" or its error.
std::string refusal(const std::string& command, const Reply& reply, const std::string& user) {
  if (is_noperm(reply))
    return command + " is not permitted to user " + quoted(user);
  return command + " failed: " + first_sentence(reply.str);
}

// The user the URL logs in as, for when the server does not say (ACL WHOAMI refused): a password
// alone logs in as the default user.
std::string url_user(const RedisUrl& url) {
  return url.user.empty() ? std::string("default") : url.user;
}

ServerFacts read_facts(Client& client, const RedisUrl& url) {
  ServerFacts facts;
  const Reply whoami = ask(client, {"ACL", "WHOAMI"});
  facts.user = whoami.is_error() ? url_user(url) : whoami.str;
  const Reply info = ask(client, {"INFO"});
  if (info.is_error())
    facts.info_refusal = refusal("INFO", info, facts.user);
  else
    facts.info = parse_fields(info.str);
  return facts;
}

std::string field(const ServerFacts& facts, const std::string& name) {
  const auto found = facts.info.find(name);
  return found == facts.info.end() ? std::string() : found->second;
}

// CONFIG GET of one parameter: its value, or nothing with the reason in `why`.
std::optional<std::string> config_get(Client& client, const ServerFacts& facts,
                                      const std::string& parameter, std::string& why) {
  const Reply reply = ask(client, {"CONFIG", "GET", parameter});
  if (reply.is_error()) {
    why = refusal("CONFIG GET", reply, facts.user);
    return std::nullopt;
  }
  if (reply.elements.size() < 2) {
    why = "CONFIG GET " + parameter + " gave nothing";
    return std::nullopt;
  }
  return reply.elements[1].str;
}

Finding version_finding(const ServerFacts& facts) {
  const std::string version = field(facts, "redis_version");
  if (version.empty()) {
    return {"version", Level::warning,
            "version: could not be read (" + facts.info_refusal +
                "); leasehold needs Redis 7.0 or later"};
  }
  if (std::atoi(version.c_str()) >= 7)
    return {"version", Level::ok, "version: Redis " + version};
  return {"version", Level::problem,
          "version: Redis " + version +
              " is too old: leasehold needs Redis 7.0 or later (SET with NX and GET together to "
              "take a lease, SPUBLISH and SSUBSCRIBE to tell waiters of a release); upgrade it"};
}

Finding eviction_finding(Client& client, const ServerFacts& facts) {
  std::string why;
  std::optional<std::string> policy = config_get(client, facts, "maxmemory-policy", why);
  // INFO memory says it too, for a user without CONFIG.
  if (!policy && !field(facts, "maxmemory_policy").empty())
    policy = field(facts, "maxmemory_policy");
  if (!policy) {
    return {"maxmemory-policy", Level::warning,
            "maxmemory-policy: could not be checked (" + why +
                "); make sure it is noeviction: any other policy may evict held leases"};
  }
  if (*policy == "noeviction") {
    return {"maxmemory-policy", Level::ok,
            "maxmemory-policy is noeviction: held leases are never evicted (a full Redis "
            "refuses new ones instead)"};
  }
  // volatile-* evicts keys with a TTL, and every lease has one.
  const std::string why_evicted =
      policy->starts_with("volatile-") ? " (every lease has a TTL)" : "";
  return {"maxmemory-policy", Level::problem,
          "maxmemory-policy is " + *policy + ": Redis may evict held leases" + why_evicted +
              "; set it to noeviction (CONFIG SET maxmemory-policy noeviction)"};
}

// What a restart does to the leases, by the persistence configured (docs/reliability.md).
Finding aof_finding(const std::optional<std::string>& fsync, const std::string& why) {
  if (!fsync) {
    return {"persistence", Level::warning,
            "persistence: AOF, appendfsync could not be read (" + why +
                "): unless it is always, a crash may forget the last leases taken"};
  }
  if (*fsync == "always") {
    return {"persistence", Level::ok,
            "persistence: AOF with appendfsync always: a lease Redis acknowledged survives a "
            "crash or restart"};
  }
  const std::string lost = *fsync == "everysec" ? "its last second" : "the last seconds";
  return {"persistence", Level::warning,
          "persistence: AOF with appendfsync " + *fsync + ": a crash may forget the leases of " +
              lost +
              ", and another holder may then take them while their holders still work; set "
              "appendfsync always for none lost (CONFIG SET appendfsync always)"};
}

// Whether the server writes an append-only file: INFO says, else CONFIG GET appendonly.
std::optional<bool> aof_enabled(Client& client, const ServerFacts& facts, std::string& why) {
  if (!field(facts, "aof_enabled").empty())
    return field(facts, "aof_enabled") == "1";
  const auto appendonly = config_get(client, facts, "appendonly", why);
  if (!appendonly)
    return std::nullopt;
  return *appendonly == "yes";
}

Finding persistence_finding(Client& client, const ServerFacts& facts) {
  std::string why;
  const std::optional<bool> aof = aof_enabled(client, facts, why);
  if (aof == true)
    return aof_finding(config_get(client, facts, "appendfsync", why), why);
  const std::optional<std::string> save =
      aof ? config_get(client, facts, "save", why) : std::nullopt;
  if (!save) {
    return {"persistence", Level::warning,
            "persistence: could not be checked (" + why +
                "); without AOF and appendfsync always, a crash forgets leases that their "
                "holders still use"};
  }
  const std::string keep =
      "; for leases that survive it: CONFIG SET appendonly yes and CONFIG SET appendfsync always";
  if (save->empty()) {
    return {"persistence", Level::warning,
            "persistence: none: a restart forgets every lease while its holder still works, "
            "and another may then take it" +
                keep};
  }
  return {"persistence", Level::warning,
          "persistence: RDB snapshots only (save " + *save +
              "): a crash forgets the leases taken since the last snapshot, and another may then "
              "take them while their holders still work" +
              keep};
}

Finding replicas_finding(const ServerFacts& facts) {
  const std::string role = field(facts, "role");
  if (role.empty()) {
    return {"replicas", Level::warning,
            "replicas: could not be checked (" + facts.info_refusal + ")"};
  }
  if (role != "master") {
    return {"replicas", Level::problem,
            "replicas: the server is a replica of " + field(facts, "master_host") + ":" +
                field(facts, "master_port") +
                ": it refuses the writes leases need; point --redis at its master"};
  }
  const std::string count = field(facts, "connected_slaves");
  if (count.empty() || count == "0")
    return {"replicas", Level::ok, "replicas: none connected"};
  return {"replicas", Level::ok,
          "replicas: " + count +
              " connected; replication is asynchronous: a failover may lose the leases taken "
              "just before it (the replica_acks option narrows that window)"};
}

Finding wait_finding(Client& client, const ServerFacts& facts) {
  // WAIT 0 0 asks for no replica: it answers at once.
  const Reply reply = ask(client, {"WAIT", "0", "0"});
  if (!reply.is_error())
    return {"wait", Level::ok, "WAIT is allowed: the replica_acks option can be used"};
  std::string advice = "if you use the replica_acks option, it fails every acquire";
  if (is_noperm(reply))
    advice += "; allow it: ACL SETUSER " + facts.user + " +wait";
  return {"wait", Level::warning, refusal("WAIT", reply, facts.user) + ": " + advice};
}

long long micros_of(const Reply& time) {
  return std::stoll(time.elements.at(0).str) * 1'000'000 + std::stoll(time.elements.at(1).str);
}

long long local_micros(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<microseconds>(at.time_since_epoch()).count();
}

std::string format_micros(long long us) {
  if (std::llabs(us) >= 1'000'000)
    return format_duration(milliseconds(std::llabs(us) / 1000));
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", static_cast<double>(std::llabs(us)) / 1000.0);
  return text;
}

// The server's clock must run (keys expire by it); an offset from this host's does not shorten a
// lease, but a clock that far off is likely to be stepped, and a step does.
Finding clock_finding(Client& client, const ServerFacts& facts) {
  const Reply first = ask(client, {"TIME"});
  std::this_thread::sleep_for(milliseconds(1));  // two readings 1 ms apart must differ
  const auto before = std::chrono::system_clock::now();
  const Reply second = ask(client, {"TIME"});
  const auto after = std::chrono::system_clock::now();
  if (first.is_error() || second.is_error() || first.elements.size() != 2 ||
      second.elements.size() != 2) {
    return {"clock", Level::warning,
            "clock: could not be checked (" +
                refusal("TIME", first.is_error() ? first : second, facts.user) + ")"};
  }
  const long long moved = micros_of(second) - micros_of(first);
  if (moved <= 0) {
    return {"clock", Level::problem,
            "clock: the server's clock did not move forward between two readings: keys would "
            "not expire when they should; fix the server's clock"};
  }
  const long long offset =
      micros_of(second) - (local_micros(before) + (local_micros(after) - local_micros(before)) / 2);
  const std::string side = offset >= 0 ? "ahead of" : "behind";
  if (std::llabs(offset) > 1'000'000) {
    return {"clock", Level::warning,
            "clock: the server's clock is " + format_micros(offset) + " " + side +
                " this host's: a lease does not depend on it, but a clock this far off may be "
                "stepped, and a step of the server's clock shortens or lengthens every lease by "
                "as much; check the time sync of both"};
  }
  return {
      "clock", Level::ok,
      "clock: the server's clock runs and is within " + format_micros(offset) + " of this host's"};
}

Finding round_trip_finding(Client& client, const ServerFacts& facts) {
  constexpr int kPings = 5;
  std::vector<long long> times;
  for (int i = 0; i < kPings; ++i) {
    const auto sent = std::chrono::steady_clock::now();
    const Reply reply = ask(client, {"PING"});
    if (reply.is_error()) {
      return {"round-trip", Level::warning,
              "round trip: could not be measured (" + refusal("PING", reply, facts.user) + ")"};
    }
    times.push_back(
        std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - sent).count());
  }
  std::sort(times.begin(), times.end());
  const long long median = times[kPings / 2];
  const std::string measured =
      "round trip: median " + format_micros(median) + " over " + std::to_string(kPings) + " PINGs";
  if (median > 10'000) {
    return {"round-trip", Level::warning,
            measured +
                ": every acquire, extend and release waits for one; keep TTLs long "
                "against it, or run the clients nearer to Redis"};
  }
  return {"round-trip", Level::ok, measured};
}
// ---- Cluster ----

struct SlotRange {
  long long first = 0;
  long long last = 0;
};

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

// The node's view of the cluster: its state and how many of the slots have a master.
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

// ---- Putting the checks together ----

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

// One server to check: a single server, or one master of a cluster.
struct Target {
  Client& client;
  RedisUrl url;
  bool in_cluster = false;        // reached through a redis-cluster:// URL
  std::vector<SlotRange> ranges;  // the slots a cluster master serves
};

Finding not_probed(const std::string& why) {
  return {"permissions", Level::warning, "permissions: not checked: " + why};
}

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
    for (Finding& finding :
         permission_findings(target.client, target.url, facts.user, globals.prefix, *scratch))
      findings.push_back(std::move(finding));
  findings.push_back(wait_finding(target.client, facts));
  findings.push_back(eviction_finding(target.client, facts));
  findings.push_back(persistence_finding(target.client, facts));
  findings.push_back(replicas_finding(facts));
  findings.push_back(clock_finding(target.client, facts));
  findings.push_back(round_trip_finding(target.client, facts));
  return findings;
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

using Json = nlohmann::ordered_json;

void print_findings(const std::string& server, const std::vector<Finding>& findings, bool json) {
  if (json) {
    Json array = Json::array();
    for (const Finding& finding : findings)
      array.push_back({{"check", finding.check},
                       {"level", level_name(finding.level)},
                       {"message", finding.message}});
    const Json report = {{"server", server}, {"findings", array}};
    std::cout << report.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    return;
  }
  std::ostringstream out;
  for (const Finding& finding : findings) {
    std::string level(level_name(finding.level));
    level.resize(9, ' ');  // "problem  ", "ok       ": the messages line up
    out << level << finding.message << "\n";
  }
  std::cout << out.str();
}

}  // namespace
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
