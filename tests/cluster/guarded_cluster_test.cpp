// Guarded writes on a real 3-master Redis Cluster: keys named with the lease's hash tag go with
// the lease to its master, on every master; a key of another slot is refused before anything is
// sent, with a message that says why.
#include <gtest/gtest.h>

#include <atomic>
#include <leasehold/leasehold.hpp>
#include <set>
#include <string>

#include "redis_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::RedisCluster;

class GuardedClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RedisCluster::Options options;
    options.replicas_per_master = 0;
    cluster_ = std::make_unique<RedisCluster>(options);
  }
  static void TearDownTestSuite() { cluster_.reset(); }

  static inline std::unique_ptr<RedisCluster> cluster_;
};

TEST_F(GuardedClusterTest, KeysWithTheLeasesHashTagAreWrittenOnEveryMaster) {
  Client redis(cluster_->url());
  constexpr Lock<std::string> plain{"guarded", 10s};
  const Lock<std::string> fenced = plain.with_fencing();
  std::set<int> masters;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "invoice-" + std::to_string(i);
    for (const auto& locks : {plain, fenced}) {
      auto token = redis.process(locks.try_lock(name));
      ASSERT_TRUE(token) << name;
      const std::string row = "invoice:" + locks.hash_tag(name) + ":row";
      auto write = guarded(*token);
      write.call({"HSET", row, "state", "final"}).call({"HGET", row, "state"});
      const auto replies = redis.process(write);
      ASSERT_TRUE(replies) << name;
      EXPECT_EQ((*replies)[1].str, "final");
      masters.insert(cluster_->master_of(key_slot(row)));
      ASSERT_TRUE(redis.process(token->release()));
    }
  }
  EXPECT_EQ(masters.size(), 3u) << "the names' slots are spread over every master";
}

TEST_F(GuardedClusterTest, AKeyOfAnotherSlotIsRefusedBeforeAnythingIsSent) {
  Client redis(cluster_->url());
  constexpr Lock<std::string> locks{"guarded", 10s};
  auto token = redis.process(locks.try_lock("elsewhere"));
  ASSERT_TRUE(token);
  std::string other = "other:0";
  for (int i = 1; key_slot(other) == key_slot(locks.key("elsewhere")); ++i)
    other = "other:" + std::to_string(i);
  try {
    redis.process(guarded(*token).call({"SET", other, "x"}));
    FAIL() << "a key of another slot was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::cross_slot) << e.what();
    EXPECT_NE(std::string(e.what()).find("hash tag"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(redis.process(Command{"GET", other}).is_nil());
}

}  // namespace
}  // namespace leasehold
