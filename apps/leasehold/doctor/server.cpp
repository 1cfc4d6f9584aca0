// leasehold doctor's checks of a server's own settings: what it says of itself (INFO, ACL
// WHOAMI), its version, what its scripts may do, its eviction policy, its persistence, its
// replicas and whether WAIT is allowed.
#include <charconv>
#include <cstdlib>
#include <optional>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

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

}  // namespace

ServerFacts read_facts(Client& client, const RedisUrl& url) {
  ServerFacts facts;
  const Reply whoami = ask(client, {"ACL", "WHOAMI"});
  facts.user = whoami.is_error() ? url_user(url) : whoami.str;
  const Reply info = ask(client, {"INFO"});
  if (info.is_error())
    facts.info_refusal = refusal("INFO", info, facts.user);
  else
    facts.info = parse_fields(info.str);
  const std::string version = field(facts, "redis_version");
  facts.redis6_mode_forced = url.compat == RedisUrl::Compat::redis6;
  facts.redis6_mode =
      facts.redis6_mode_forced || (!version.empty() && std::atoi(version.c_str()) < 7);
  return facts;
}

std::string field(const ServerFacts& facts, const std::string& name) {
  const auto found = facts.info.find(name);
  return found == facts.info.end() ? std::string() : found->second;
}

Finding version_finding(const ServerFacts& facts) {
  const std::string version = field(facts, "redis_version");
  if (version.empty()) {
    return {"version", Level::warning,
            "version: could not be read (" + facts.info_refusal +
                "); leasehold needs Redis 6.0 or later, and is at its best on 7.0 or later"};
  }
  // Valkey gives its own version beside the Redis version it is compatible with.
  const std::string valkey = field(facts, "valkey_version");
  const std::string server =
      valkey.empty() ? "Redis " + version : "Valkey " + valkey + " (Redis " + version + ")";
  const int major = std::atoi(version.c_str());
  if (major < 6) {
    return {"version", Level::problem,
            "version: " + server +
                " is too old: leasehold needs Redis 6.0 or later (ACL users, KEEPTTL in its "
                "scripts); upgrade it"};
  }
  if (major < 7) {
    return {"version", Level::ok,
            "version: " + server +
                ", in Redis 6 mode: each acquire is a script sent as EVAL, and waiters are told "
                "by PUBLISH and SUBSCRIBE (docs/connection.md, Servers)"};
  }
  if (facts.redis6_mode_forced) {
    return {"version", Level::warning,
            "version: " + server +
                ", and the URL asks for Redis 6 mode (?compat=redis6): acquires cost more than "
                "this server needs; drop compat=redis6"};
  }
  return {"version", Level::ok, "version: " + server};
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
                "); make sure it is noeviction: any other policy may evict held leases or fence "
                "counters"};
  }
  if (*policy == "noeviction") {
    return {"maxmemory-policy", Level::ok,
            "maxmemory-policy is noeviction: held leases are never evicted (a full Redis "
            "refuses new ones instead)"};
  }
  // volatile-* evicts keys with a TTL, and every lease has one; allkeys-* fence counters, fence
  // records and Election terms too, which have none (a lease fence then counts from the server's
  // clock, but a term starts again at 1 and a record forgets the newest fence).
  const std::string what_evicted =
      policy->starts_with("volatile-")
          ? "held leases (every lease has a TTL)"
          : "held leases, fence records and election terms (a term would start again at 1)";
  return {"maxmemory-policy", Level::problem,
          "maxmemory-policy is " + *policy + ": Redis may evict " + what_evicted +
              "; set it to noeviction (CONFIG SET maxmemory-policy noeviction)"};
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

Finding replicas_finding(const ServerFacts& facts, const ClientOptions& options,
                         bool behind_sentinel) {
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
  const std::string connected = field(facts, "connected_slaves");
  int count = 0;
  if (!connected.empty()) {
    const auto [end, error] =
        std::from_chars(connected.data(), connected.data() + connected.size(), count);
    if (error != std::errc() || end != connected.data() + connected.size() || count < 0)
      return {"replicas", Level::warning,
              "replicas: could not be checked (INFO gave connected_slaves:" + connected + ")"};
  }
  const std::string replicas =
      "replicas: " + (count == 0 ? std::string("none") : connected) + " connected";
  const int acks = options.replica_acks;
  const std::string asked = "replica_acks=" + std::to_string(acks);
  const std::string how_many = std::to_string(acks) + (acks == 1 ? " is" : " are");
  // Behind Sentinel, safe failover counts the replicas the sentinels know of (safe-failover).
  if (options.safe_failover && !behind_sentinel) {
    if (acks < count)
      return {"replicas", Level::problem,
              replicas + ", but safe failover waits for " + asked +
                  ": a failover may promote a replica that lacks a lease, and grant it again; "
                  "set replica_acks=" +
                  connected + " (every replica)"};
    if (acks > count)
      return {"replicas", Level::problem,
              replicas + ", and safe failover waits for " + asked +
                  ": every grant and extension fails until " + how_many +
                  " connected; bring the replicas back, or set replica_acks to their number"};
    return {"replicas", Level::ok,
            replicas +
                ", and safe failover waits for all of them: a failover keeps every "
                "lease, and while one is away no lease is granted"};
  }
  if (acks > count)
    return {"replicas", Level::problem,
            replicas + ", and " + asked + " waits for more: every acquire and extension fails " +
                "until " + how_many + " connected"};
  if (count == 0)
    return {"replicas", Level::ok, replicas};
  if (options.safe_failover)
    return {"replicas", Level::ok,
            replicas + "; safe failover waits for every replica the sentinels know of"};
  return {"replicas", Level::ok,
          replicas +
              "; replication is asynchronous: a failover may lose the leases taken just before "
              "it (replica_acks narrows that window, safe_failover closes it)"};
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

Finding scripts_finding(Client& client, const ServerFacts& facts) {
  // Some servers restrict scripts (ElastiCache Serverless refuses both of these).
  const Reply keyless = ask(client, {"EVAL", "return 1", "0"});
  if (is_noperm(keyless))
    return {"scripts", Level::warning,
            "scripts: not checked: " + refusal("EVAL", keyless, facts.user)};
  const Reply clock = ask(client, {"EVAL", "return redis.call('TIME')[1]", "0"});
  const std::string without_keys =
      keyless.is_error() ? "; scripts may not run without keys (" + keyless.str + ")" : "";
  if (clock.is_error()) {
    return {"scripts", Level::problem,
            "scripts: a script may not call TIME (" + clock.str +
                "): leasehold's scripts read the server's clock (waiting in turn, semaphores, "
                "fencing numbers, status), so this server cannot serve its leases" +
                without_keys};
  }
  if (keyless.is_error()) {
    return {"scripts", Level::warning,
            "scripts: may call TIME" + without_keys +
                ": leasehold's scripts all name their keys, but a script run by hand without one "
                "is refused"};
  }
  return {"scripts", Level::ok, "scripts: may call TIME and run without keys"};
}

}  // namespace leasehold::cli::doctor_detail
