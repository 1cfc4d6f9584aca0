#include "redis_sentinel.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace leasehold::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` every 20 ms until it holds or `timeout` passes; throws `what` then.
template <class Done>
void wait_until(Done done, std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline)
      throw std::runtime_error("the Sentinel test group: " + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling against a deadline
  }
}

bool says(const Reply& reply, const std::string& words) {
  return reply.str.find(words) != std::string::npos;
}

std::string role_of(RedisServer& server) {
  try {
    const Reply role = server.command({"ROLE"});
    return role.elements.empty() ? "" : role.elements.front().str;
  } catch (const std::exception&) {
    return "";  // stopped or paused
  }
}

}  // namespace

RedisSentinelGroup::RedisSentinelGroup() : RedisSentinelGroup(Options{}) {}

std::vector<std::string> RedisSentinelGroup::tls_args(int tls_port) const {
  if (options_.tls == nullptr)
    return {};
  std::vector<std::string> args = options_.tls->server_args(tls_port, false);
  args.insert(args.end(), {"--tls-replication", "yes"});
  return args;
}

RedisSentinelGroup::RedisSentinelGroup(Options options) : options_(std::move(options)) {
  // Each server with the TLS port it will have (a free one now), noted by its plain port; on its
  // own lab host with Options::lab.
  const auto start = [this](const std::string& host, std::vector<std::string> args,
                            std::vector<std::string> config) {
    const int tls_port = options_.tls ? free_port() : 0;
    RedisServer::Options server;
    server.extra_args = std::move(args);
    const std::vector<std::string> tls = tls_args(tls_port);
    server.extra_args.insert(server.extra_args.end(), tls.begin(), tls.end());
    std::optional<NetworkLab::Host> lab_host;
    if (options_.lab != nullptr) {
      lab_host = options_.lab->add_host(host);
      server.launcher = options_.lab->on(*lab_host);
      server.bind = lab_host->address;
    }
    auto started = config.empty()
                       ? std::make_unique<RedisServer>(std::move(server))
                       : std::make_unique<RedisServer>(std::move(server), std::move(config));
    if (options_.tls)
      tls_ports_[started->port()] = tls_port;
    if (lab_host)
      hosts_[started->port()] = *lab_host;
    return started;
  };
  servers_.push_back(start("redis-0", {}, {}));
  const std::string master_address = named_address(*servers_.front());
  const std::string master_host = master_address.substr(0, master_address.rfind(':'));
  const std::string master_port = std::to_string(named_port(*servers_.front()));
  for (std::size_t i = 0; i < options_.replicas; ++i)
    servers_.push_back(
        start("redis-" + std::to_string(i + 1), {"--replicaof", master_host, master_port}, {}));
  // In sync before the sentinels start: their first look at the master finds every replica.
  wait_until(
      [&] {
        for (std::size_t i = 1; i < servers_.size(); ++i)
          if (!says(servers_[i]->command({"INFO", "replication"}), "master_link_status:up"))
            return false;
        return true;
      },
      std::chrono::seconds(10), "the replicas did not sync with the master");
  const std::string& name = options_.master_name;
  for (std::size_t i = 0; i < options_.sentinels; ++i) {
    std::vector<std::string> args;
    if (!options_.sentinel_password.empty())
      args = {"--requirepass", options_.sentinel_password};
    sentinels_.push_back(
        start("sentinel-" + std::to_string(i), std::move(args),
              {"sentinel monitor " + name + " " + master_host + " " + master_port + " 2",
               "sentinel down-after-milliseconds " + name + " " +
                   std::to_string(options_.down_after.count()),
               "sentinel failover-timeout " + name + " " +
                   std::to_string(options_.failover_timeout.count()),
               "sentinel parallel-syncs " + name + " 2"}));
    if (options_.info_period.count() > 0) {
      const Reply set = ask_sentinel(
          *sentinels_.back(),
          {"SENTINEL", "DEBUG", "info-period", std::to_string(options_.info_period.count()),
           "publish-period", std::to_string(options_.info_period.count() / 2)});
      if (set.is_error())
        throw std::runtime_error("SENTINEL DEBUG: " + set.str);
    }
  }
  // Sentinels find each other by their hellos on the master, every 2 s.
  wait_until(
      [&] {
        for (const auto& sentinel : sentinels_) {
          const Reply others = ask_sentinel(*sentinel, {"SENTINEL", "SENTINELS", name});
          const Reply replicas = ask_sentinel(*sentinel, {"SENTINEL", "REPLICAS", name});
          if (others.elements.size() + 1 != sentinels_.size() ||
              replicas.elements.size() != options_.replicas)
            return false;
        }
        return true;
      },
      std::chrono::seconds(20), "the sentinels did not find each other and the replicas");
}

std::string RedisSentinelGroup::url() const {
  std::string url = options_.tls ? "rediss-sentinel://" : "redis-sentinel://";
  for (std::size_t i = 0; i < sentinels_.size(); ++i)
    url += (i == 0 ? "" : ",") + named_address(*sentinels_[i]);
  return url + "/" + options_.master_name;
}

std::string RedisSentinelGroup::named_address(const RedisServer& server) const {
  const auto host = hosts_.find(server.port());
  const std::string address = host == hosts_.end() ? "127.0.0.1" : host->second.address;
  return address + ":" + std::to_string(named_port(server));
}

const std::string& RedisSentinelGroup::host_name(const RedisServer& server) const {
  const auto host = hosts_.find(server.port());
  if (host == hosts_.end())
    throw std::logic_error("the Sentinel test group: the server has no lab host");
  return host->second.name;
}

int RedisSentinelGroup::named_port(const RedisServer& server) const {
  const auto tls = tls_ports_.find(server.port());
  return tls == tls_ports_.end() ? server.port() : tls->second;
}

Reply RedisSentinelGroup::ask_sentinel(RedisServer& sentinel,
                                       const std::vector<std::string>& args) const {
  sentinel.admin_password = options_.sentinel_password;
  return sentinel.command(args);
}

RedisServer* RedisSentinelGroup::master() {
  for (const auto& server : servers_)
    if (server->pid() > 0 && role_of(*server) == "master")
      return server.get();
  return nullptr;
}

void RedisSentinelGroup::wait_named(RedisServer& server, std::chrono::milliseconds timeout) {
  const std::string address = named_address(server);
  wait_until(
      [&] {
        for (const auto& sentinel : sentinels_)
          if (sentinel->pid() > 0 && named_by(*sentinel) != address)
            return false;
        return true;
      },
      timeout, "the sentinels do not all name " + address);
}

std::string RedisSentinelGroup::named_by(RedisServer& sentinel) const {
  try {
    const Reply named =
        ask_sentinel(sentinel, {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name});
    if (named.elements.size() != 2)
      return "";
    return named.elements[0].str + ":" + named.elements[1].str;
  } catch (const std::exception&) {
    return "";  // stopped or paused
  }
}

RedisServer& RedisSentinelGroup::wait_replaced(const RedisServer& old,
                                               std::chrono::milliseconds timeout) {
  RedisServer* replacement = nullptr;
  wait_until(
      [&] {
        std::map<std::string, std::size_t> votes;
        for (const auto& sentinel : sentinels_)
          if (sentinel->pid() > 0)
            ++votes[named_by(*sentinel)];
        for (const auto& server : servers_)
          if (server.get() != &old && 2 * votes[named_address(*server)] > sentinels_.size())
            replacement = server.get();
        return replacement != nullptr;
      },
      timeout, "no majority of the sentinels named another master than " + named_address(old));
  return *replacement;
}

RedisServer& RedisSentinelGroup::wait_settled(std::chrono::milliseconds timeout) {
  RedisServer* settled = nullptr;
  std::string unsettled;  // what the last look found amiss
  const auto whole = [&] {
    std::vector<RedisServer*> masters;
    for (const auto& server : servers_)
      if (server->pid() > 0 && role_of(*server) == "master")
        masters.push_back(server.get());
    if (masters.size() != 1) {
      unsettled = std::to_string(masters.size()) + " servers say they are master";
      return false;
    }
    settled = masters.front();
    const std::string address = named_address(*settled);
    for (const auto& sentinel : sentinels_) {
      const std::string named = sentinel->pid() > 0 ? named_by(*sentinel) : address;
      if (named != address) {
        unsettled = "a sentinel names " + named + ", not the master " + address;
        return false;
      }
    }
    const std::string host = address.substr(0, address.rfind(':'));
    const std::string port = address.substr(address.rfind(':') + 1);
    for (const auto& server : servers_) {
      if (server.get() == settled || server->pid() <= 0)
        continue;
      Reply info;
      try {
        info = server->command({"INFO", "replication"});
      } catch (const std::exception& e) {
        // Not settled yet, not a failure: Sentinel kills every normal client of a server it
        // turns into a replica (CLIENT KILL TYPE normal), the test's own connection included.
        unsettled = "the server " + named_address(*server) + " did not answer: " + e.what();
        return false;
      }
      if (!says(info, "master_host:" + host + "\r\n") ||
          !says(info, "master_port:" + port + "\r\n") || !says(info, "master_link_status:up")) {
        unsettled = "the server " + named_address(*server) + " is not a replica of " + address +
                    " with its link up";
        return false;
      }
    }
    return true;
  };
  try {
    wait_until(whole, timeout, "");
  } catch (const std::runtime_error&) {
    throw std::runtime_error(
        "the Sentinel test group did not settle on one master with every "
        "replica in sync: " +
        unsettled);
  }
  return *settled;
}

std::string RedisSentinelGroup::describe() {
  std::string out;
  for (const auto& server : servers_) {
    out += "  server " + named_address(*server) + ":";
    if (server->pid() <= 0) {
      out += " stopped\n";
      continue;
    }
    try {
      std::istringstream info(server->command({"INFO", "replication"}).str);
      for (std::string line; std::getline(info, line);) {
        if (!line.empty() && line.back() == '\r')
          line.pop_back();
        for (const char* field :
             {"role:", "master_host:", "master_port:", "master_link_status:",
              "master_link_down_since_seconds:", "master_sync_in_progress:", "connected_slaves:"})
          if (line.starts_with(field))
            out += " " + line;
      }
    } catch (const std::exception& e) {
      out += std::string(" no answer (") + e.what() + ")";
    }
    out += "\n";
  }
  for (const auto& sentinel : sentinels_) {
    out += "  sentinel " + std::to_string(sentinel->port()) + ": names " + named_by(*sentinel) +
           ", replicas";
    try {
      const Reply replicas =
          ask_sentinel(*sentinel, {"SENTINEL", "REPLICAS", options_.master_name});
      for (const Reply& replica : replicas.elements) {
        std::string name, flags;
        for (std::size_t i = 0; i + 1 < replica.elements.size(); i += 2) {
          if (replica.elements[i].str == "name")
            name = replica.elements[i + 1].str;
          else if (replica.elements[i].str == "flags")
            flags = replica.elements[i + 1].str;
        }
        out += " " + name + " (" + flags + ")";
      }
    } catch (const std::exception& e) {
      out += std::string(" unknown (") + e.what() + ")";
    }
    out += "\n";
  }
  return out;
}

void RedisSentinelGroup::reattach_to_named_master() {
  std::map<std::string, int> votes;
  for (const auto& sentinel : sentinels_)
    if (sentinel->pid() > 0)
      if (const std::string named = named_by(*sentinel); !named.empty())
        ++votes[named];
  if (votes.empty())
    throw std::runtime_error("the Sentinel test group: no sentinel names a master");
  const std::string master =
      std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  const std::string host = master.substr(0, master.rfind(':'));
  const std::string port = master.substr(master.rfind(':') + 1);
  for (const auto& server : servers_)
    if (server->pid() > 0 && named_address(*server) != master)
      server->command({"REPLICAOF", host, port});
}

RedisServer& RedisSentinelGroup::start_failover(std::chrono::milliseconds timeout) {
  RedisServer* const before = master();
  send_failover(timeout);
  RedisServer* after = nullptr;
  wait_until(
      [&] {
        for (const auto& sentinel : sentinels_) {
          if (sentinel->pid() <= 0)
            continue;
          const std::string named = named_by(*sentinel);
          for (const auto& server : servers_)
            if (server.get() != before && named == named_address(*server))
              after = server.get();
        }
        return after != nullptr;
      },
      timeout, "no sentinel named another master");
  return *after;
}

void RedisSentinelGroup::send_failover(std::chrono::milliseconds timeout) {
  // A sentinel that has not heard from a replica lately finds no good one (NOGOODSLAVE) and
  // asks again after its next INFO; on a loaded machine that takes a while.
  Reply started;
  wait_until(
      [&] {
        started = ask_sentinel(*sentinels_.front(), {"SENTINEL", "FAILOVER", options_.master_name});
        return !started.is_error() || started.str.find("NOGOODSLAVE") == std::string::npos;
      },
      timeout, "SENTINEL FAILOVER found no good replica");
  if (started.is_error())
    throw std::runtime_error("SENTINEL FAILOVER: " + started.str);
}

RedisServer& RedisSentinelGroup::failover(std::chrono::milliseconds timeout) {
  RedisServer* before = master();
  send_failover(timeout);
  RedisServer* after = nullptr;
  wait_until(
      [&] {
        after = master();
        return after != nullptr && after != before;
      },
      timeout, "no other server became master");
  wait_named(*after, timeout);
  return *after;
}

}  // namespace leasehold::testing
