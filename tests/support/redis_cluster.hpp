// A private Redis Cluster for one test suite: N masters with R replicas each, every node a
// RedisServer (temp dir, free loopback port, never 6379) started with --cluster-enabled yes, the
// cluster created by `redis-cli --cluster create ... --cluster-yes`, and ready when every node
// says cluster_state:ok and every replica is in sync. Stopped by the destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "network_lab.hpp"
#include "redis_server.hpp"
#include "test_certificates.hpp"

namespace leasehold::testing {

class RedisCluster {
 public:
  struct Options {
    int masters = 3;
    int replicas_per_master = 1;
    // How long a node may be unreachable before it is failed over (cluster-node-timeout).
    std::chrono::milliseconds node_timeout{1000};
    std::vector<std::string> extra_args;
    // A TLS cluster (tls-cluster yes, tls-replication yes) with these certificates, which must
    // outlive the cluster; its url() is rediss-cluster:// to the TLS ports. The admin channels
    // stay plain, and a plain connection's CLUSTER SLOTS gives the plain ports.
    const TestCertificates* tls = nullptr;
    // When set: node i runs on a host of its own in this lab ("node-<i>"), listening on its
    // address there, so that a test can cut the nodes apart. Without TLS.
    NetworkLab* lab = nullptr;
  };

  RedisCluster();
  explicit RedisCluster(Options options);
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  const Options& options() const { return options_; }
  // redis-cluster://127.0.0.1:<port of node 0>,127.0.0.1:<port of node 1> (rediss-cluster://
  // and the TLS ports for a TLS cluster; the lab addresses with Options::lab)
  std::string url() const;
  // "address:port" by which the cluster names node `index` (its TLS port for a TLS cluster).
  std::string address(std::size_t index) const;
  // The lab host node `index` runs on (with Options::lab).
  const std::string& host_name(std::size_t index) const;
  std::size_t size() const { return nodes_.size(); }
  RedisServer& node(std::size_t index) { return *nodes_[index]; }

  // The index of the node that a live node's CLUSTER SLOTS says serves `slot`, or -1.
  int master_of(std::uint16_t slot) const;
  // The indices of the replicas that a live node's CLUSTER SLOTS lists for `slot`.
  std::vector<int> replicas_of(std::uint16_t slot) const;
  // The slot of `key` (CLUSTER KEYSLOT).
  std::uint16_t slot_of(const std::string& key) const;
  // Waits until a majority of the nodes other than `old` say that another node serves `slot`:
  // that node's index. Each node is asked over its unix socket, which no lab partition cuts.
  int wait_replaced(int old, std::uint16_t slot, std::chrono::milliseconds timeout) const;
  // The indices of the live nodes that are masters with slots, by a live node's CLUSTER SLOTS.
  std::vector<int> masters() const;
  int index_of_port(int port) const;
  // Polls until every live node reports cluster_state:ok and the same slot map; throws on timeout.
  void wait_ok(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // Moves `slot` with its keys from its master to the master `to` (CLUSTER SETSLOT IMPORTING /
  // MIGRATING, MIGRATE of its keys in batches, SETSLOT NODE everywhere) as redis-cli does.
  void move_slot(std::uint16_t slot, int to) const;
  // A command through the node's own admin channel.
  Reply command(std::size_t index, const std::vector<std::string>& args) const;

 private:
  // Starts the nodes and runs redis-cli --cluster create; throws with its log when that fails.
  void create();
  Reply slots_of_a_live_node() const;
  std::string node_id(std::size_t index) const;

  Options options_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<int> tls_ports_;           // a TLS cluster's, by node
  std::vector<NetworkLab::Host> hosts_;  // with Options::lab, by node
};

}  // namespace leasehold::testing
