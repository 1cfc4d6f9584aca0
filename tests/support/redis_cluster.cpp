#include "redis_cluster.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

namespace leasehold::testing {
namespace {

std::string info_field(const std::string& info, const std::string& field) {
  const auto at = info.find(field + ":");
  if (at == std::string::npos)
    return {};
  const auto start = at + field.size() + 1;
  return info.substr(start, info.find_first_of("\r\n", start) - start);
}

// CLUSTER SLOTS as "start-end master replica…" lines, the replicas sorted: each node lists a
// master's replicas in an order of its own.
std::string canonical_map(const Reply& slots) {
  std::vector<std::string> ranges;
  for (const Reply& range : slots.elements) {
    std::string line = std::to_string(range.elements[0].integer) + "-" +
                       std::to_string(range.elements[1].integer) + " " +
                       to_string(range.elements[2]);
    std::vector<std::string> replicas;
    for (std::size_t r = 3; r < range.elements.size(); ++r)
      replicas.push_back(to_string(range.elements[r]));
    std::sort(replicas.begin(), replicas.end());
    for (const std::string& replica : replicas)
      line += " " + replica;
    ranges.push_back(line);
  }
  std::sort(ranges.begin(), ranges.end());
  std::string map;
  for (const std::string& line : ranges)
    map += line + "\n";
  return map;
}

}  // namespace

RedisCluster::RedisCluster() : RedisCluster(Options{}) {}

RedisCluster::RedisCluster(Options options) : options_(std::move(options)) {
  // Each node's ports were free when it started, but another process on the machine can still get
  // in the way of the nodes meeting on their bus ports: a failed creation is tried again once with
  // new nodes, and its log is printed so that the cause stays visible.
  try {
    create();
  } catch (const std::runtime_error& error) {
    std::fprintf(stderr, "%s\ntrying again with new nodes\n", error.what());
    nodes_.clear();
    tls_ports_.clear();
    create();  // on the same lab hosts, if any
  }
  wait_ok();
}

void RedisCluster::create() {
  const int count = options_.masters * (1 + options_.replicas_per_master);
  for (int i = 0; i < count; ++i) {
    RedisServer::Options server;
    server.extra_args = {"--cluster-enabled",      "yes",
                         "--cluster-config-file",  "nodes.conf",
                         "--cluster-node-timeout", std::to_string(options_.node_timeout.count())};
    server.extra_args.insert(server.extra_args.end(), options_.extra_args.begin(),
                             options_.extra_args.end());
    if (options_.tls) {
      // With tls-cluster the bus listens on the TLS port + 10000: keep that in range.
      int tls_port = 0;
      do {
        tls_port = free_port();
      } while (tls_port > 55000);
      tls_ports_.push_back(tls_port);
      const auto tls_args = options_.tls->server_args(tls_port, true);
      server.extra_args.insert(server.extra_args.end(), tls_args.begin(), tls_args.end());
      server.extra_args.insert(server.extra_args.end(),
                               {"--tls-cluster", "yes", "--tls-replication", "yes"});
    }
    if (options_.lab != nullptr) {
      if (hosts_.size() <= static_cast<std::size_t>(i))
        hosts_.push_back(options_.lab->add_host("node-" + std::to_string(i)));
      server.launcher = options_.lab->on(hosts_[static_cast<std::size_t>(i)]);
      server.bind = hosts_[static_cast<std::size_t>(i)].address;
    }
    nodes_.push_back(std::make_unique<RedisServer>(server));
  }
  // In a lab, from the first node's host: the nodes listen on their lab addresses only.
  std::string command;
  if (options_.lab != nullptr)
    for (const std::string& word : options_.lab->on(hosts_.front()))
      command += word + " ";
  command += "redis-cli";
  if (options_.tls) {
    command += " --tls --cacert " + options_.tls->ca_file() + " --cert " +
               options_.tls->client_cert() + " --key " + options_.tls->client_key();
  }
  command += " --cluster create";
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    command += " " + address(i);
  command += " --cluster-replicas " + std::to_string(options_.replicas_per_master) +
             " --cluster-yes > " + nodes_.front()->dir() + "/cluster-create.log 2>&1";
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The nodes' directories go with them: the log's text travels in the message.
    std::ifstream log(nodes_.front()->dir() + "/cluster-create.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    throw std::runtime_error("redis-cli --cluster create failed:\n" + text);
  }
}

RedisCluster::~RedisCluster() = default;

std::string RedisCluster::url() const {
  return (options_.tls ? "rediss-cluster://" : "redis-cluster://") + address(0) + "," + address(1);
}

std::string RedisCluster::address(std::size_t index) const {
  const std::string host = options_.lab != nullptr ? hosts_.at(index).address : "127.0.0.1";
  return host + ":" +
         std::to_string(options_.tls ? tls_ports_.at(index) : nodes_.at(index)->port());
}

const std::string& RedisCluster::host_name(std::size_t index) const {
  if (options_.lab == nullptr)
    throw std::logic_error("the test cluster: its nodes have no lab hosts");
  return hosts_.at(index).name;
}

Reply RedisCluster::command(std::size_t index, const std::vector<std::string>& args) const {
  return nodes_[index]->command(args);
}

int RedisCluster::index_of_port(int port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->port() == port)
      return static_cast<int>(i);
  return -1;
}

Reply RedisCluster::slots_of_a_live_node() const {
  for (const auto& node : nodes_) {
    if (node->pid() <= 0)
      continue;
    try {
      Reply slots = node->command({"CLUSTER", "SLOTS"});
      if (slots.type == Reply::Type::array)
        return slots;
    } catch (const std::exception&) {
      // paused or gone: ask the next one
    }
  }
  throw std::runtime_error("no live cluster node answered CLUSTER SLOTS");
}

int RedisCluster::master_of(std::uint16_t slot) const {
  const Reply slots = slots_of_a_live_node();
  for (const Reply& range : slots.elements) {
    if (range.elements[0].integer <= slot && slot <= range.elements[1].integer)
      return index_of_port(static_cast<int>(range.elements[2].elements[1].integer));
  }
  return -1;
}

std::vector<int> RedisCluster::replicas_of(std::uint16_t slot) const {
  std::vector<int> replicas;
  for (const Reply& range : slots_of_a_live_node().elements) {
    if (range.elements[0].integer <= slot && slot <= range.elements[1].integer)
      for (std::size_t r = 3; r < range.elements.size(); ++r)
        replicas.push_back(index_of_port(static_cast<int>(range.elements[r].elements[1].integer)));
  }
  return replicas;
}

std::uint16_t RedisCluster::slot_of(const std::string& key) const {
  for (const auto& node : nodes_)
    if (node->pid() > 0)
      return static_cast<std::uint16_t>(node->command({"CLUSTER", "KEYSLOT", key}).integer);
  throw std::runtime_error("no live cluster node to ask for a key's slot");
}

int RedisCluster::wait_replaced(int old, std::uint16_t slot,
                                std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<int> votes(nodes_.size(), 0);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (static_cast<int>(i) == old || nodes_[i]->pid() <= 0)
        continue;
      try {
        for (const Reply& range : nodes_[i]->command({"CLUSTER", "SLOTS"}).elements)
          if (range.elements[0].integer <= slot && slot <= range.elements[1].integer) {
            const int named =
                index_of_port(static_cast<int>(range.elements[2].elements[1].integer));
            if (named >= 0)
              ++votes[static_cast<std::size_t>(named)];
          }
      } catch (const std::exception&) {
        // stopped or paused: it has no say
      }
    }
    for (std::size_t i = 0; i < votes.size(); ++i)
      if (static_cast<int>(i) != old && 2 * static_cast<std::size_t>(votes[i]) > nodes_.size())
        return static_cast<int>(i);
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(
          "no majority of the cluster's nodes named another master than node " +
          std::to_string(old) + " for slot " + std::to_string(slot));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling against a deadline
  }
}

std::vector<int> RedisCluster::masters() const {
  std::vector<int> result;
  for (const Reply& range : slots_of_a_live_node().elements) {
    const int index = index_of_port(static_cast<int>(range.elements[2].elements[1].integer));
    if (std::find(result.begin(), result.end(), index) == result.end())
      result.push_back(index);
  }
  return result;
}

std::string RedisCluster::node_id(std::size_t index) const {
  return command(index, {"CLUSTER", "MYID"}).str;
}

void RedisCluster::wait_ok(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    bool ok = true;
    std::string first_map;
    for (std::size_t i = 0; i < nodes_.size() && ok; ++i) {
      if (nodes_[i]->pid() <= 0)
        continue;
      const std::string info = command(i, {"CLUSTER", "INFO"}).str;
      if (info_field(info, "cluster_state") != "ok") {
        ok = false;
        last = "node " + std::to_string(i) + ": cluster_state " + info_field(info, "cluster_state");
        break;
      }
      const std::string map = canonical_map(command(i, {"CLUSTER", "SLOTS"}));
      if (first_map.empty()) {
        first_map = map;
      } else if (map != first_map) {
        ok = false;
        last = "node " + std::to_string(i) + " has another slot map: " + map + ", not " + first_map;
      }
      const std::string replication = command(i, {"INFO", "replication"}).str;
      if (info_field(replication, "role") == "slave" &&
          (info_field(replication, "master_link_status") != "up" ||
           info_field(replication, "master_sync_in_progress") != "0")) {
        ok = false;
        last = "replica " + std::to_string(i) + " is not in sync";
      }
    }
    if (ok)
      return;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("the cluster did not become ready: " + last);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling against a deadline
  }
}

void RedisCluster::move_slot(std::uint16_t slot, int to) const {
  const int from = master_of(slot);
  if (from < 0 || from == to)
    throw std::runtime_error("move_slot: bad source or target");
  const std::string slot_text = std::to_string(slot);
  const std::string from_id = node_id(static_cast<std::size_t>(from));
  const std::string to_id = node_id(static_cast<std::size_t>(to));
  auto check = [](const Reply& reply, const char* what) {
    if (reply.is_error())
      throw std::runtime_error(std::string(what) + ": " + reply.str);
  };
  check(command(static_cast<std::size_t>(to),
                {"CLUSTER", "SETSLOT", slot_text, "IMPORTING", from_id}),
        "SETSLOT IMPORTING");
  check(command(static_cast<std::size_t>(from),
                {"CLUSTER", "SETSLOT", slot_text, "MIGRATING", to_id}),
        "SETSLOT MIGRATING");
  for (;;) {
    const Reply keys =
        command(static_cast<std::size_t>(from), {"CLUSTER", "GETKEYSINSLOT", slot_text, "10"});
    if (keys.elements.empty())
      break;
    const std::string target = address(static_cast<std::size_t>(to));
    std::vector<std::string> migrate = {
        "MIGRATE",
        target.substr(0, target.rfind(':')),
        std::to_string(nodes_[static_cast<std::size_t>(to)]->port()),
        "",
        "0",
        "5000",
        "KEYS"};
    for (const Reply& key : keys.elements)
      migrate.push_back(key.str);
    check(command(static_cast<std::size_t>(from), migrate), "MIGRATE");
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->pid() <= 0)
      continue;
    const std::string role = info_field(command(i, {"INFO", "replication"}).str, "role");
    if (role == "master")
      check(command(i, {"CLUSTER", "SETSLOT", slot_text, "NODE", to_id}), "SETSLOT NODE");
  }
}

}  // namespace leasehold::testing
