// A fixture base for cluster suites that share one Redis Cluster (3 masters + 3 replicas): started
// before the suite's first test, stopped after its last. Suites that break the cluster
// (resharding, failover) start their own.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "redis_cluster.hpp"

namespace leasehold::testing {

class SharedClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = std::make_unique<RedisCluster>(); }
  static void TearDownTestSuite() { cluster_.reset(); }

  // `what`, made unique to this process and call: for names tests must not share.
  static std::string unique(const std::string& what) {
    static std::atomic<int> counter{0};
    return what + "." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  }

  static inline std::unique_ptr<RedisCluster> cluster_;
};

}  // namespace leasehold::testing
