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
    create();
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
    nodes_.push_back(std::make_unique<RedisServer>(server));
  }
  std::string command = "redis-cli";
  if (options_.tls) {
    command += " --tls --cacert " + options_.tls->ca_file() + " --cert " +
               options_.tls->client_cert() + " --key " + options_.tls->client_key();
  }
  command += " --cluster create";
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    command += " 127.0.0.1:" + std::to_string(options_.tls ? tls_ports_[i] : nodes_[i]->port());
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
  if (options_.tls) {
    return "rediss-cluster://127.0.0.1:" + std::to_string(tls_ports_[0]) +
           ",127.0.0.1:" + std::to_string(tls_ports_[1]);
  }
  return "redis-cluster://127.0.0.1:" + std::to_string(nodes_[0]->port()) +
         ",127.0.0.1:" + std::to_string(nodes_[1]->port());
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
      const std::string map = to_string(command(i, {"CLUSTER", "SLOTS"}));
      if (first_map.empty()) {
        first_map = map;
      } else if (map != first_map) {
        ok = false;
        last = "node " + std::to_string(i) + " has another slot map";
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
    std::vector<std::string> migrate = {
        "MIGRATE", "127.0.0.1", std::to_string(nodes_[static_cast<std::size_t>(to)]->port()),
        "",        "0",         "5000",
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
