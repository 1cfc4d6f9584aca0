// The checks of a Sentinel URL's sentinels: whether they answer and agree on the master, whether
// they can fail over (CKQUORUM), how long a failover takes next to a lease's TTL, whether a
// master cut off from its replicas stops taking writes (min-replicas-to-write), and with safe
// failover whether every replica it waits for is there.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

// A connection to one sentinel, with the sentinels' own credentials.
std::unique_ptr<Client> sentinel_client(const RedisUrl& url, const RedisUrl::Endpoint& sentinel) {
  RedisUrl at;
  at.host = sentinel.host;
  at.port = sentinel.port;
  at.tls = url.tls;
  at.user = url.sentinel_user;
  at.password = url.sentinel_password;
  at.has_password = url.has_sentinel_password;
  ClientOptions options;
  options.client_name = "leasehold-doctor";
  // As long as the master's: a sentinel slow to answer is slow, not absent.
  options.connect_timeout = std::chrono::milliseconds(2000);
  options.command_timeout = std::chrono::milliseconds(2000);
  options.warn_on_eviction_policy = false;  // a sentinel keeps no keys
  return std::make_unique<Client>(std::move(at), options);
}

// A field of SENTINEL MASTER's reply (names and values in turn), empty when absent.
std::string master_field(const Reply& reply, const std::string& name) {
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
    if (reply.elements[i].str == name)
      return reply.elements[i + 1].str;
  return {};
}

// Safe failover waits for every replica the sentinels know of, those they think down too: one
// away stops every grant.
Finding safe_failover_finding(Client& sentinel, const std::string& master_name) {
  const Reply replicas = ask(sentinel, {"SENTINEL", "REPLICAS", master_name});
  if (replicas.is_error())
    return {"safe-failover", Level::warning,
            "safe-failover: the replicas could not be listed (" + first_sentence(replicas.str) +
                "); every grant waits for each replica the sentinels know of"};
  std::vector<std::string> away;
  for (const Reply& replica : replicas.elements) {
    const std::string flags = master_field(replica, "flags");
    if (flags.find("s_down") != std::string::npos || flags.find("o_down") != std::string::npos ||
        flags.find("disconnected") != std::string::npos)
      away.push_back(master_field(replica, "name") + " (" + flags + ")");
  }
  const std::string known = std::to_string(replicas.elements.size());
  if (away.empty())
    return {"safe-failover", Level::ok,
            "safe-failover: every grant and extension waits for the " + known +
                " replicas the sentinels know of, and all are up: a failover keeps every lease"};
  std::string list;
  for (const std::string& item : away)
    list += (list.empty() ? "" : ", ") + item;
  return {"safe-failover", Level::warning,
          "safe-failover: " + std::to_string(away.size()) + " of the " + known +
              " replicas the sentinels know of are away (" + list +
              "): no lease is granted or extended until they are back; if one is gone for "
              "good, make the sentinels forget it (SENTINEL RESET " +
              master_name + " on each sentinel)"};
}

}  // namespace

std::vector<Finding> sentinel_findings(Client& master, const RedisUrl& url) {
  std::vector<Finding> findings;
  std::vector<std::string> answered;
  std::vector<std::string> silent;
  std::vector<std::string> named;  // the master each sentinel that answered names
  std::unique_ptr<Client> first;   // the first sentinel that answered
  for (const RedisUrl::Endpoint& sentinel : url.seeds) {
    try {
      auto client = sentinel_client(url, sentinel);
      const Reply reply = ask(*client, {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", url.master_name});
      if (reply.is_error()) {
        silent.push_back(sentinel.address() + " (" + first_sentence(reply.str) + ")");
        continue;
      }
      answered.push_back(sentinel.address());
      named.push_back(
          reply.elements.size() == 2
              ? RedisUrl::Endpoint{reply.elements[0].str,
                                   static_cast<std::uint16_t>(std::stoi(reply.elements[1].str))}
                    .address()
              : "none");
      if (!first)
        first = std::move(client);
    } catch (const std::exception& e) {
      silent.push_back(sentinel.address() + " (" + first_sentence(e.what()) + ")");
    }
  }
  const auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items)
      out += (out.empty() ? "" : ", ") + item;
    return out;
  };
  const bool agree =
      !named.empty() && std::all_of(named.begin(), named.end(),
                                    [&](const std::string& n) { return n == named.front(); });
  if (answered.empty()) {
    findings.push_back(
        {"sentinels", Level::problem, "sentinels: none of the URL's answered: " + join(silent)});
    return findings;
  }
  if (!silent.empty() || !agree) {
    std::string message = "sentinels: " + std::to_string(answered.size()) + " of " +
                          std::to_string(url.seeds.size()) + " answered";
    if (!silent.empty())
      message += " (not: " + join(silent) + ")";
    if (!agree)
      message += "; they name different masters (" + join(named) + "): a failover may be under way";
    findings.push_back({"sentinels", Level::warning, message});
  } else {
    findings.push_back({"sentinels", Level::ok,
                        "sentinels: all " + std::to_string(answered.size()) + " answer and name " +
                            named.front() + " the master of '" + url.master_name + "'"});
  }

  const Reply quorum = ask(*first, {"SENTINEL", "CKQUORUM", url.master_name});
  if (quorum.is_error())
    findings.push_back({"quorum", Level::problem,
                        "quorum: the sentinels could not fail '" + url.master_name +
                            "' over: " + first_sentence(quorum.str)});
  else
    findings.push_back({"quorum", Level::ok, "quorum: " + quorum.str});

  const Reply settings = ask(*first, {"SENTINEL", "MASTER", url.master_name});
  const std::string down_after = master_field(settings, "down-after-milliseconds");
  const std::string failover_timeout = master_field(settings, "failover-timeout");
  if (!down_after.empty()) {
    findings.push_back(
        {"failover-time", Level::ok,
         "failover-time: a dead master is replaced after down-after-milliseconds " + down_after +
             " ms and then the election (failover-timeout " + failover_timeout +
             " ms bounds it); leases cannot be granted meanwhile, and a lease whose TTL is "
             "shorter runs out before its holder can extend it"});
  }

  const Reply min_replicas = ask(master, {"CONFIG", "GET", "min-replicas-to-write"});
  if (min_replicas.is_error() || min_replicas.elements.size() != 2) {
    findings.push_back(
        {"min-replicas-to-write", Level::warning,
         "min-replicas-to-write: could not be read (" + first_sentence(min_replicas.str) + ")"});
  } else if (min_replicas.elements[1].str == "0") {
    findings.push_back(
        {"min-replicas-to-write", Level::warning,
         "min-replicas-to-write: 0: a master cut off from its replicas goes on granting and "
         "extending leases that the master Sentinel promotes never sees; set it to 1 (with "
         "min-replicas-max-lag) on the master and the replicas"});
  } else {
    findings.push_back({"min-replicas-to-write", Level::ok,
                        "min-replicas-to-write: " + min_replicas.elements[1].str +
                            ": a master cut off from its replicas stops taking writes"});
  }
  if (master.options().safe_failover)
    findings.push_back(safe_failover_finding(*first, url.master_name));
  return findings;
}

}  // namespace leasehold::cli::doctor_detail
