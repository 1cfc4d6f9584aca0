// Leases across failovers and partitions, checked the way Jepsen checks a database: Redis servers
// on hosts of their own in a NetworkLab (a Sentinel group, or a Redis Cluster), and clients on
// three more hosts that take, extend and release leases, with fencing numbers, and record every
// step (history.hpp). A nemesis cuts the network, pauses, kills or restarts a server, round after
// round; the history checker then says whether two clients ever held a name at once, whether a
// fencing number ever went back, how many leases were lost, and how long no lease could be
// granted.
//
// Each mode (a query on the URL) meets each nemesis in turn, for a number of rounds that
// LEASEHOLD_TORTURE_SCALE sets (a few in the short tier, many in scripts/soak), and reports its
// figures per nemesis (FIGURE lines; docs/reliability.md). Whatever the mode, the client's own
// guarantees hold: no lease is said to be held past its deadline, no grant is counted after it,
// and every client works again once the deployment has settled.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "network_lab.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {

enum class Nemesis {
  isolate_master,      // the master alone on one side
  split_with_replica,  // the master, one of its replicas and one client's host on the minority side
  pause_master,        // SIGSTOP past the failure detector's timeout, then SIGCONT
  kill_master,         // SIGKILL, then a restart without its data
  restart_replica,     // a replica killed and restarted without its data
};

std::string name_of(Nemesis nemesis);

constexpr int kClientHosts = 3;
constexpr auto kLeaseTtl = std::chrono::milliseconds(1000);
// How long a deployment may take to fail over or to settle again.
constexpr auto kSettle = std::chrono::seconds(60);

// Where the nemeses strike: servers on lab hosts, and kClientHosts client hosts.
class Deployment {
 public:
  virtual ~Deployment() = default;

  static std::string client_host(int c) { return "client-" + std::to_string(c); }
  virtual NetworkLab& lab() = 0;
  // The URL the clients use, before the mode's query.
  virtual std::string url() const = 0;
  // The names the clients take (comma-separated): the ones whose master the nemeses strike.
  virtual std::string names() const = 0;
  // Runs `nemesis` on the settled deployment, ends it, and waits until the deployment has settled
  // again; records the steps in `faults` ("promoted", "ended").
  virtual void run(Nemesis nemesis, const Recorder& faults) = 0;
};

// What a fault does once another master has been named: records "promoted" and lasts long enough
// for a lease granted or extended on the old master to outlive its copy on the new one.
void hold_after_promotion(const Recorder& faults);

// How many rounds of each nemesis a mode runs: in the short tier, and at full scale (times the
// scale in between).
struct Rounds {
  int short_tier;
  int full;
};
// Whether this is CI's short tier (LEASEHOLD_TORTURE_SCALE unset or "short"), not scripts/soak.
bool short_tier();

// The default mode and one acknowledgement, whose figures are reported as found.
constexpr Rounds kReportedRounds{1, 6};
// Safe failover, which promises no overlap: 20 rounds in CI, 200 in scripts/soak.
constexpr Rounds kSafeRounds{4, 40};

// Every nemesis in turn, `rounds` times each, under six clients whose URL is the deployment's
// with `query`; the figures reported as "partition_<mode>_<nemesis>". The history's report.
HistoryReport nemesis_scenario(Deployment& deployment, const std::string& mode,
                               const std::string& query, Rounds rounds);

// Safe failover's promise, checked: no two clients held a name at once, and no fencing number
// went back.
void expect_safe(const HistoryReport& report);

// Skips the test where no network lab can be made.
class PartitionNemesisTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

}  // namespace leasehold::testing::torture
