// A Redis Cluster over TLS (rediss-cluster://), with certificates made by the test.
#include <gtest/gtest.h>

#include <chrono>
#include <leasehold/leasehold.hpp>
#include <string>
#include <vector>

#include "redis_cluster.hpp"
#include "test_certificates.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::RedisCluster;

// rediss-cluster://: the seeds, the slot map and every master over TLS, with one set of
// certificates for all nodes (they name 127.0.0.1).
TEST(ClusterTls, LocksOnEveryMasterOfATlsCluster) {
  const testing::TestCertificates certificates;
  RedisCluster::Options cluster_options;
  cluster_options.replicas_per_master = 0;
  cluster_options.tls = &certificates;
  RedisCluster cluster(cluster_options);
  ASSERT_EQ(cluster.url().rfind("rediss-cluster://", 0), 0u) << cluster.url();
  ClientOptions options;
  options.tls.ca_file = certificates.ca_file();
  options.tls.cert_file = certificates.client_cert();
  options.tls.key_file = certificates.client_key();
  Client redis(cluster.url(), options);
  const Lock<std::string> lock{"tls", 30s};
  std::vector<TryLock<Lock<std::string>>> acquires;
  for (int i = 0; i < 300; ++i)
    acquires.push_back(lock.try_lock("name-" + std::to_string(i)));
  auto tokens = redis.process(acquires);
  std::vector<ReleaseLock<Lock<std::string>>> releases;
  for (auto& token : tokens) {
    ASSERT_TRUE(token.has_value()) << token.detail();
    ASSERT_TRUE(token->has_value());
    releases.push_back((*token)->release());
  }
  // Every master holds some of them: the client reached each one over TLS.
  const std::vector<int> masters = cluster.masters();
  ASSERT_EQ(masters.size(), 3u);
  for (int master : masters)
    EXPECT_GT(cluster.command(static_cast<std::size_t>(master), {"DBSIZE"}).integer, 50)
        << "master " << master;
  for (auto& released : redis.process(releases))
    EXPECT_TRUE(*released);
  for (int master : masters)
    EXPECT_EQ(cluster.command(static_cast<std::size_t>(master), {"DBSIZE"}).integer, 0);

  // A client that does not trust the nodes' CA gets nowhere, and says why.
  ClientOptions distrusting = options;
  distrusting.tls.ca_file = certificates.other_ca_file();
  Client refused(cluster.url(), distrusting);
  try {
    refused.process(lock.try_lock("name-0"));
    ADD_FAILURE() << "a lock through nodes whose certificates are not trusted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::tls_failed) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate was refused"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace leasehold
