// Aligned cron claims on a real Redis Cluster: the claim script touches a job's two keys, both
// declared in KEYS and under one hash tag, so that it runs on the master of the job's slot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <leasehold/leasehold.hpp>
#include <string>
#include <vector>

#include "redis_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::RedisCluster;

TEST(ClusterCron, AlignedClaimsRunOnTheMasterOfTheJobsSlotAndCanBeGivenBack) {
  RedisCluster cluster;
  Client a(cluster.url());
  Client b(cluster.url());
  const std::string prefix = "cron-cluster-" + std::to_string(::getpid());
  std::vector<std::string> names = {"report", "a{b}c", "{x}", "}{", "per:cent%7B"};
  for (int i = 0; i < 20; ++i)
    names.push_back("job-" + std::to_string(i));
  for (const std::string& name : names) {
    const cron::OncePerIntervalOptions options{.aligned = true, .prefix = prefix};
    cron::IntervalLease replica_a(a, name, 1h, options);
    cron::IntervalLease replica_b(b, name, 1h, options);
    auto first = replica_a.claim();
    ASSERT_TRUE(first) << name;
    ASSERT_TRUE(first->slot.has_value());
    // Both keys on the master of the job's slot (the layout of docs/cron.md).
    const std::string slot_key = first->token.key();
    ASSERT_TRUE(slot_key.ends_with(":slot")) << slot_key;
    const std::string high_key = slot_key.substr(0, slot_key.size() - 5) + ":high";
    ASSERT_EQ(key_slot(slot_key), key_slot(high_key)) << name;
    const int master = cluster.master_of(key_slot(slot_key));
    ASSERT_GE(master, 0);
    EXPECT_EQ(
        cluster.command(static_cast<std::size_t>(master), {"EXISTS", slot_key, high_key}).integer,
        2)
        << name;
    // Another replica finds the slot taken (or, past the end of the hour, gets the next one).
    if (auto busy = replica_b.claim()) {
      EXPECT_GT(*busy->slot, *first->slot) << name;
      continue;
    }
    // Given back, it is granted again.
    EXPECT_TRUE(a.process(first->token.release())) << name;
    auto again = replica_b.claim();
    ASSERT_TRUE(again) << name;
    EXPECT_GE(*again->slot, *first->slot);
  }
}

}  // namespace
}  // namespace leasehold
