// The nemeses (nemesis.hpp) on a Sentinel deployment: a master, two replicas and three sentinels,
// each on a host of its own, and clients that reach them through a redis-sentinel:// URL.
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "nemesis.hpp"
#include "redis_sentinel.hpp"

namespace leasehold::testing::torture {
namespace {

class SentinelDeployment : public Deployment {
 public:
  SentinelDeployment() : group_(group_options(lab_)) {
    for (int c = 0; c < kClientHosts; ++c)
      lab_.add_host(client_host(c));
  }

  NetworkLab& lab() override { return lab_; }
  std::string url() const override { return group_.url(); }
  std::string names() const override { return name_list(2); }

  void run(Nemesis nemesis, const Recorder& faults) override {
    RedisServer& master = settle(faults);
    const std::string master_host = group_.host_name(master);
    switch (nemesis) {
      case Nemesis::isolate_master:
        lab_.partition({master_host});
        hold_past_failover(master, faults);
        lab_.heal();
        break;
      case Nemesis::split_with_replica:
        lab_.partition({master_host, group_.host_name(a_replica(master)), client_host(0)});
        hold_past_failover(master, faults);
        lab_.heal();
        break;
      case Nemesis::pause_master:
        master.pause();
        hold_past_failover(master, faults);
        master.resume();
        break;
      case Nemesis::kill_master:
        master.kill();
        hold_past_failover(master, faults);
        master.start();
        break;
      case Nemesis::restart_replica: {
        RedisServer& replica = a_replica(master);
        replica.kill();
        replica.start();
        // As its configuration would say: Sentinel rewrites a replica's when it moves it.
        const std::string address = group_.named_address(master);
        replica.command({"REPLICAOF", address.substr(0, address.rfind(':')),
                         address.substr(address.rfind(':') + 1)});
        break;
      }
    }
    faults.record({.kind = EventKind::fault, .detail = "ended"});
    settle(faults);
  }

 private:
  // The group settled, as every round starts and ends. Should Sentinel leave a server detached
  // past kSettle, the test fails with what each server and sentinel said, the server is pointed
  // at the master the sentinels name (as an operator would), and the rounds go on: a long run
  // still reports its figures, and the failure says what to look at.
  RedisServer& settle(const Recorder& faults) {
    try {
      return group_.wait_settled(kSettle);
    } catch (const std::runtime_error& e) {
      ADD_FAILURE() << e.what() << "; the group:\n" << group_.describe();
    }
    faults.record({.kind = EventKind::fault, .detail = "reattached"});
    group_.reattach_to_named_master();
    return group_.wait_settled(kSettle);
  }

  static RedisSentinelGroup::Options group_options(NetworkLab& lab) {
    RedisSentinelGroup::Options options;
    options.lab = &lab;
    // The short tier looks every second, so that 20 failovers fit CI's time; scripts/soak keeps
    // Sentinel's own periods, whose failover tails docs/reliability.md reports, unless
    // LEASEHOLD_SENTINEL_INFO_PERIOD_MS sets one (a round then takes seconds, not a minute).
    if (short_tier())
      options.info_period = std::chrono::seconds(1);
    if (const char* period = std::getenv("LEASEHOLD_SENTINEL_INFO_PERIOD_MS"))
      options.info_period = std::chrono::milliseconds(std::stoi(period));
    return options;
  }

  RedisServer& a_replica(const RedisServer& master) {
    for (std::size_t i = 0; i < group_.server_count(); ++i)
      if (&group_.server(i) != &master)
        return group_.server(i);
    throw std::logic_error("no replica");
  }

  void hold_past_failover(const RedisServer& old_master, const Recorder& faults) {
    group_.wait_replaced(old_master, kSettle);
    hold_after_promotion(faults);
  }

  NetworkLab lab_;
  RedisSentinelGroup group_;
};

class PartitionNemesis : public PartitionNemesisTest {};

TEST_F(PartitionNemesis, WithoutAcknowledgementsTheClientsGuaranteesHold) {
  SentinelDeployment deployment;
  nemesis_scenario(deployment, "acks0", "", kReportedRounds);
}

TEST_F(PartitionNemesis, WithOneAcknowledgementTheClientsGuaranteesHold) {
  SentinelDeployment deployment;
  nemesis_scenario(deployment, "acks1", "?replica_acks=1&replica_ack_timeout=200ms",
                   kReportedRounds);
}

// Overlaps, and fencing numbers that went back, are what the two modes above report; safe
// failover promises neither, and the test holds it to that.
TEST_F(PartitionNemesis, WithSafeFailoverNoTwoClientsEverHoldANameAtOnce) {
  SentinelDeployment deployment;
  expect_safe(nemesis_scenario(deployment, "safe", "?safe_failover=1&replica_ack_timeout=200ms",
                               kSafeRounds));
}

}  // namespace
}  // namespace leasehold::testing::torture
