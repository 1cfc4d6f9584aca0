// The nemeses (nemesis.hpp) on a Redis Cluster of three masters with two replicas each, every
// node on a host of its own, and clients that reach them through a redis-cluster:// URL. The
// clients' names all live on one master, the one each nemesis strikes; two replicas per master
// let the split leave the old master one replica, the case that one acknowledgement cannot beat.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "nemesis.hpp"
#include "redis_cluster.hpp"

namespace leasehold::testing::torture {
namespace {

class ClusterDeployment : public Deployment {
 public:
  ClusterDeployment() : cluster_(cluster_options(lab_)) {
    for (int c = 0; c < kClientHosts; ++c)
      lab_.add_host(client_host(c));
    names_ = names_on_one_master();
  }

  NetworkLab& lab() override { return lab_; }
  std::string url() const override { return cluster_.url(); }
  std::string names() const override { return names_; }

  void run(Nemesis nemesis, const Recorder& faults) override {
    cluster_.wait_ok(kSettle);
    const std::uint16_t slot = slot_of("n0");
    const int master = cluster_.master_of(slot);
    RedisServer& node = cluster_.node(static_cast<std::size_t>(master));
    const std::string master_host = cluster_.host_name(static_cast<std::size_t>(master));
    switch (nemesis) {
      case Nemesis::isolate_master:
        lab_.partition({master_host});
        hold_past_failover(master, slot, faults);
        lab_.heal();
        break;
      case Nemesis::split_with_replica:
        lab_.partition({master_host, cluster_.host_name(a_replica(slot)), client_host(0)});
        hold_past_failover(master, slot, faults);
        lab_.heal();
        break;
      case Nemesis::pause_master:
        node.pause();
        hold_past_failover(master, slot, faults);
        node.resume();
        break;
      case Nemesis::kill_master:
        node.kill();
        hold_past_failover(master, slot, faults);
        node.start();  // with its nodes.conf, so that it rejoins as a replica
        break;
      case Nemesis::restart_replica: {
        RedisServer& replica = cluster_.node(a_replica(slot));
        replica.kill();
        replica.start();
        break;
      }
    }
    faults.record({.kind = EventKind::fault, .detail = "ended"});
    cluster_.wait_ok(kSettle);
  }

 private:
  static RedisCluster::Options cluster_options(NetworkLab& lab) {
    RedisCluster::Options options;
    options.replicas_per_master = 2;
    options.lab = &lab;
    return options;
  }

  // The slot of a name's lease: the torture worker's fenced lock keys it
  // "torture:Lock:{torture:<name>}".
  std::uint16_t slot_of(const std::string& name) const {
    return cluster_.slot_of("{torture:" + name + "}");
  }

  // "n0" and the next name served by the same master.
  std::string names_on_one_master() const {
    const int master = cluster_.master_of(slot_of("n0"));
    for (int n = 1; n < 1000; ++n) {
      const std::string name = "n" + std::to_string(n);
      if (cluster_.master_of(slot_of(name)) == master)
        return "n0," + name;
    }
    throw std::logic_error("no second name on the master of n0");
  }

  std::size_t a_replica(std::uint16_t slot) const {
    const std::vector<int> replicas = cluster_.replicas_of(slot);
    if (replicas.empty() || replicas.front() < 0)
      throw std::logic_error("the master of the names has no replica");
    return static_cast<std::size_t>(replicas.front());
  }

  void hold_past_failover(int old_master, std::uint16_t slot, const Recorder& faults) {
    cluster_.wait_replaced(old_master, slot, kSettle);
    hold_after_promotion(faults);
  }

  NetworkLab lab_;
  RedisCluster cluster_;
  std::string names_;
};

class PartitionNemesisOnCluster : public PartitionNemesisTest {};

TEST_F(PartitionNemesisOnCluster, WithoutAcknowledgementsTheClientsGuaranteesHold) {
  ClusterDeployment deployment;
  nemesis_scenario(deployment, "cluster_acks0", "", kReportedRounds);
}

TEST_F(PartitionNemesisOnCluster, WithOneAcknowledgementTheClientsGuaranteesHold) {
  ClusterDeployment deployment;
  nemesis_scenario(deployment, "cluster_acks1", "?replica_acks=1&replica_ack_timeout=200ms",
                   kReportedRounds);
}

// Without Sentinel, safe failover takes the number of replicas to wait for from replica_acks:
// every replica of a master, two here.
TEST_F(PartitionNemesisOnCluster, WithSafeFailoverNoTwoClientsEverHoldANameAtOnce) {
  ClusterDeployment deployment;
  expect_safe(nemesis_scenario(deployment, "cluster_safe",
                               "?safe_failover=1&replica_acks=2&replica_ack_timeout=200ms",
                               kSafeRounds));
}

}  // namespace
}  // namespace leasehold::testing::torture
