// leasehold doctor on a real Redis Cluster: fit as created, unfit with safe failover waiting for
// more replicas than a master has, and unfit once a range of slots has no master.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "build_paths.hpp"
#include "eventually.hpp"
#include "redis_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisCluster;

struct CliRun {
  int exit_code = -1;
  std::string out;
};

CliRun doctor(const std::string& url) {
  const std::string command =
      std::string(testing::build_paths::cli) + " --redis '" + url + "' doctor";
  FILE* out = ::popen(command.c_str(), "r");
  CliRun run;
  if (out == nullptr)
    return run;
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, out))
    run.out.append(buffer, got);
  const int status = ::pclose(out);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(ClusterDoctor, AClusterWithUnassignedSlotsIsAProblem) {
  RedisCluster cluster;
  const CliRun fit = doctor(cluster.url());
  EXPECT_EQ(fit.exit_code, 0) << fit.out;
  EXPECT_EQ(fit.out.find("problem"), std::string::npos) << fit.out;
  // One line per check that every master answers alike.
  EXPECT_NE(fit.out.find("\nok       cluster: state ok, all 16384 slots assigned\n"),
            std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("\nok       locks: user 'default' may run"), std::string::npos) << fit.out;

  // Safe failover's count is replica_acks on a cluster: every master's replicas, no fewer.
  const CliRun safe = doctor(cluster.url() + "?safe_failover=1&replica_acks=1");
  EXPECT_EQ(safe.exit_code, 0) << safe.out;
  EXPECT_NE(safe.out.find("\nok       replicas: 1 connected, and safe failover waits for all of "
                          "them"),
            std::string::npos)
      << safe.out;
  const CliRun more = doctor(cluster.url() + "?safe_failover=1&replica_acks=2");
  EXPECT_EQ(more.exit_code, 1) << more.out;
  EXPECT_NE(more.out.find("\nproblem  replicas: 1 connected, and safe failover waits for "
                          "replica_acks=2: every grant and extension fails until 2 are connected"),
            std::string::npos)
      << more.out;

  // Every node forgets slots 0-99: no node serves them, and the cluster goes down.
  for (std::size_t node = 0; node < cluster.size(); ++node)
    ASSERT_EQ(cluster.command(node, {"CLUSTER", "DELSLOTSRANGE", "0", "99"}).str, "OK");
  ASSERT_TRUE(eventually(
      [&] {
        for (std::size_t node = 0; node < cluster.size(); ++node)
          if (cluster.command(node, {"CLUSTER", "INFO"}).str.find("cluster_state:fail") ==
              std::string::npos)
            return false;
        return true;
      },
      10s));
  const CliRun unfit = doctor(cluster.url());
  EXPECT_EQ(unfit.exit_code, 1) << unfit.out;
  EXPECT_NE(unfit.out.find("problem  cluster: cluster_state is fail and 16284 of 16384 slots are "
                           "assigned"),
            std::string::npos)
      << unfit.out;
}

}  // namespace
}  // namespace leasehold
