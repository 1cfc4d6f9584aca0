// The pieces of `leasehold doctor` that its files share: the findings, the raw commands it sends
// and how it reads their replies, what a server says of itself, and the checks of each area.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "leasehold/leasehold.hpp"

namespace leasehold::cli::doctor_detail {

enum class Level { ok, warning, problem };

struct Finding {
  std::string check;  // a stable name: "version", "maxmemory-policy", "locks", ...
  Level level = Level::ok;
  std::string message;  // the line to print; it names the check in its own words
};

// ---- Asking (ask.cpp)

// A raw command whose error reply is a value, not an exception: doctor judges refusals itself.
// Failing to reach Redis still throws (and exits 69).
Reply ask(Client& client, const std::vector<std::string>& args);

bool is_noperm(const Reply& reply);

// "'app'": a user name as messages show it.
std::string quoted(const std::string& user);

// A server's error up to its first full stop: one line stays short.
std::string first_sentence(const std::string& text);

// Why a command gave no answer: "INFO is not permitted to user 'app'" or its error.
std::string refusal(const std::string& command, const Reply& reply, const std::string& user);

// The user the URL logs in as, for when the server does not say (ACL WHOAMI refused): a password
// alone logs in as the default user.
std::string url_user(const RedisUrl& url);

// "key:value" lines of INFO or CLUSTER INFO; section headers and blank lines skipped.
std::map<std::string, std::string> parse_fields(const std::string& text);

// ---- The server's own settings (server.cpp)

// What one server says of itself, read once for the checks that need it.
struct ServerFacts {
  std::string user;                         // the ACL user doctor runs as
  std::map<std::string, std::string> info;  // INFO's default sections; empty if refused
  std::string info_refusal;                 // why INFO gave nothing
  // Whether the client sends this server what Redis 6 knows (docs/connection.md, "Servers"):
  // the URL says ?compat=redis6, or INFO gives a version older than 7.0.
  bool redis6_mode = false;
  bool redis6_mode_forced = false;
};
ServerFacts read_facts(Client& client, const RedisUrl& url);
// An INFO field; empty when INFO did not give it.
std::string field(const ServerFacts& facts, const std::string& name);

Finding version_finding(const ServerFacts& facts);
// Whether scripts may call TIME and run without keys (some managed servers refuse both).
Finding scripts_finding(Client& client, const ServerFacts& facts);
Finding eviction_finding(Client& client, const ServerFacts& facts);
Finding persistence_finding(Client& client, const ServerFacts& facts);
// Whether the server is a master, its replicas, and whether the client's replica_acks and
// safe_failover (`options`) fit their number; behind Sentinel, safe failover's count is the
// sentinels' (safe-failover, sentinel.cpp).
Finding replicas_finding(const ServerFacts& facts, const ClientOptions& options,
                         bool behind_sentinel);
Finding wait_finding(Client& client, const ServerFacts& facts);

// ---- The connection to it (connection.cpp)

Finding clock_finding(Client& client, const ServerFacts& facts);
Finding round_trip_finding(Client& client, const ServerFacts& facts);

// ---- Permissions (permissions.cpp)

// The findings "locks", "waiting" and "notifications": whether `user` may run each command
// leasehold sends, tried on `client` (and SSUBSCRIBE on a connection of its own to `url`) with
// `scratch` as key and channel name. `prefix` names the key and channel patterns to grant.
std::vector<Finding> permission_findings(Client& client, const RedisUrl& url,
                                         const std::string& user, const std::string& prefix,
                                         const std::string& scratch, bool redis6_mode);

// ---- A Sentinel URL's sentinels (sentinel.cpp)

// The findings "sentinels", "quorum", "failover-time" and "min-replicas-to-write" (and with
// safe failover "safe-failover"), from the URL's sentinels and from `master`, the client
// connected to the master they name.
std::vector<Finding> sentinel_findings(Client& master, const RedisUrl& url);

// ---- One server's checks (doctor.cpp)

struct SlotRange {
  long long first = 0;
  long long last = 0;
};

// One server to check: a single server, or one master of a cluster.
struct Target {
  Client& client;
  RedisUrl url;
  bool in_cluster = false;        // reached through a redis-cluster:// URL
  std::vector<SlotRange> ranges;  // the slots a cluster master serves
};

// Every check of `target`, in the order they are shown.
std::vector<Finding> check_server(const Globals& globals, const Target& target);

// ---- A cluster (cluster.cpp)

// The node's view of the cluster: its state and how many of the slots have a master.
Finding cluster_finding(Client& node, const ServerFacts& facts);

// Every master of the cluster of `redis`, checked as one server each, as one list of findings.
std::vector<Finding> check_cluster(const Globals& globals, Client& redis);

// ---- The report (report.cpp)

// The findings on stdout, as aligned lines or as one line of JSON.
void print_findings(const std::string& server, const std::vector<Finding>& findings, bool json);

}  // namespace leasehold::cli::doctor_detail
