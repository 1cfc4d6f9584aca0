// A fixture base for integration suites that share one private redis-server: started before the
// suite's first test, stopped after its last. Tests that kill, pause or reconfigure a server start
// their own RedisServer instead.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "redis_server.hpp"

namespace leasehold::testing {

class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<RedisServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  // A number unique in this process, for names and prefixes that tests must not share.
  static int unique_number() {
    static std::atomic<int> counter{0};
    return ++counter;
  }

  static inline std::unique_ptr<RedisServer> server_;
};

}  // namespace leasehold::testing
