// Fence counters on a single server: one per prefix, shared by every fenced name of the prefix
// (a Redis Cluster keeps one per hash slot: tests/cluster), never below the server's clock. A
// name's own counter of the per-name layout is moved into it on the name's first grant, and
// kept in step for a week, so that no fence a name was ever given comes again — whichever kind
// grants it, and while processes of the per-name layout still increment the old counter. A
// counter that lost its last value still gives larger fences.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "key_count.hpp"
#include "leasehold/leasehold.hpp"
#include "server_clock.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

constexpr long long kWeekMs = 7LL * 24 * 3600 * 1000;

class FenceCounterTest : public testing::SharedServerTest {
 protected:
  FenceCounterTest() : redis_(server_->unix_url()) {}

  // A prefix of the test's own: the server's counter is every fenced name's of a prefix, and
  // the suite may run in one process against one server.
  const std::string prefix_ = "fence-counter-" + std::to_string(unique_number());

  std::string get(const std::string& key) { return server_->command({"GET", key}).str; }
  long long pttl(const std::string& key) { return server_->command({"PTTL", key}).integer; }
  // A counter value above the server's clock (by 1000 s and more), such as a name's own counter
  // that ran ahead of it: the next fence then counts on from the counter, not from the clock.
  // Each is above every earlier one plus `n` < 100 000, so above what the shared counter holds.
  std::uint64_t ahead_of_clock(std::uint64_t n) {
    static std::uint64_t calls = 0;
    return testing::server_clock_us(*server_) + 1'000'000'000 + 100'000 * ++calls + n;
  }

  // A name's own counter holds `before`: its next fence is above it, the server's counter holds
  // that fence, and its own counter is kept in step with a week to live.
  void expect_moved(std::uint64_t fence, std::uint64_t before, const std::string& own,
                    const std::string& counter) {
    EXPECT_EQ(fence, before + 1);
    EXPECT_EQ(get(counter), std::to_string(fence));
    EXPECT_EQ(get(own), std::to_string(fence));
    EXPECT_GT(pttl(own), kWeekMs - 60'000);
    EXPECT_LE(pttl(own), kWeekMs);
  }

  // The name's own counter holds `before`; take(name) grants a lease on it, which then moves
  // the counter (expect_moved) and is released.
  template <class Kind, class Take>
  void expect_grant_moves(const Kind& kind, const std::string& name, std::uint64_t before,
                          Take take) {
    server_->command({"SET", kind.own_fence_key(name), std::to_string(before)});
    auto token = take(name);
    ASSERT_TRUE(token && token->fence()) << name;
    expect_moved(*token->fence(), before, kind.own_fence_key(name),
                 kind.server_fence_counter_key());
    ASSERT_TRUE(redis_.process(token->release())) << name;
  }

  Client redis_;
};

TEST_F(FenceCounterTest, ALocksFirstGrantMovesItsOwnCounterIntoItsSlotsAndStaysAboveIt) {
  const auto lock = Lock<std::string>{"moved", 10s, prefix_}.with_fencing();
  const std::uint64_t own = ahead_of_clock(41);
  server_->command({"SET", lock.own_fence_key("invoice"), std::to_string(own)});
  const auto query = lock.try_lock("invoice");
  auto token = redis_.process(query);
  ASSERT_TRUE(token && token->fence());
  expect_moved(*token->fence(), own, lock.own_fence_key("invoice"),
               lock.server_fence_counter_key());
  // A retry of the same grant (as after a lost reply) reports the same fence.
  auto again = redis_.process(query);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fence(), token->fence());
  ASSERT_TRUE(redis_.process(token->release()));

  // In turn, too: the own counter of another name, far above the server's.
  expect_grant_moves(lock, "ledger", ahead_of_clock(5000), [&](const std::string& name) {
    return lock_until(redis_, lock, name, Clock::now() + 5s);
  });
}

TEST_F(FenceCounterTest, EveryFencedKindMovesItsOwnCounter) {
  const auto rw = RwLock<std::string>{"moved-rw", 10s, prefix_}.with_fencing();
  expect_grant_moves(rw, "catalog", ahead_of_clock(70),
                     [&](const std::string& name) { return redis_.process(rw.try_write(name)); });
  expect_grant_moves(rw, "index", ahead_of_clock(900), [&](const std::string& name) {
    return write_until(redis_, rw, name, Clock::now() + 5s);
  });

  const auto permits = Semaphore<std::string>{"moved-permits", 2, 10s, prefix_}.with_fencing();
  expect_grant_moves(permits, "export", ahead_of_clock(33), [&](const std::string& name) {
    return redis_.process(permits.try_acquire(name));
  });
  expect_grant_moves(permits, "import", ahead_of_clock(8000), [&](const std::string& name) {
    return acquire_until(redis_, permits, name, Clock::now() + 5s);
  });

  const std::string prefix = "moved-locker-" + std::to_string(unique_number());
  Locker locker(redis_, prefix, Fencing::on);
  const std::uint64_t own = ahead_of_clock(12);
  server_->command({"SET", locker.own_fence_key("report"), std::to_string(own)});
  std::optional<std::uint64_t> fence;
  locker.with_lock("report", [&] { fence = locker.fence("report"); });
  ASSERT_TRUE(fence);
  expect_moved(*fence, own, locker.own_fence_key("report"), locker.server_fence_counter_key());
}

// During a rolling upgrade, processes of the per-name layout increment the name's own counter
// (its whole acquire was: take the key, INCR the counter), and processes of this one the server's:
// fences still increase in grant order, whoever grants.
TEST_F(FenceCounterTest, FencesKeepIncreasingWhileProcessesOfThePerNameLayoutStillGrant) {
  const auto lock = Lock<std::string>{"rolling", 10s, prefix_}.with_fencing();
  const std::string own = lock.own_fence_key("job");
  server_->command({"SET", own, "10"});
  std::vector<std::uint64_t> fences;
  for (int round = 0; round < 5; ++round) {
    auto token = redis_.process(lock.try_lock("job"));
    ASSERT_TRUE(token && token->fence());
    fences.push_back(*token->fence());
    ASSERT_TRUE(redis_.process(token->release()));
    // An older process's grant.
    fences.push_back(static_cast<std::uint64_t>(server_->command({"INCR", own}).integer));
  }
  for (std::size_t i = 1; i < fences.size(); ++i)
    EXPECT_GT(fences[i], fences[i - 1]) << "grant " << i;
  // Another name counts on from there.
  auto next = redis_.process(lock.try_lock("next"));
  ASSERT_TRUE(next && next->fence());
  EXPECT_GT(*next->fence(), fences[fences.size() - 2]) << "above every fence of the counter";
  ASSERT_TRUE(redis_.process(next->release()));
}

TEST_F(FenceCounterTest, StatusShowsTheLargerOfTheServersCounterAndANamesOwn) {
  const auto lock = Lock<std::string>{"status-own", 10s, prefix_}.with_fencing();
  server_->command({"SET", lock.own_fence_key("unmoved"), "777"});
  auto status = redis_.process(lease_status(lock, std::string("unmoved")));
  ASSERT_TRUE(status.fence);
  EXPECT_EQ(*status.fence, 777u);
  auto token = redis_.process(lock.try_lock("unmoved"));
  ASSERT_TRUE(token);
  status = redis_.process(lease_status(lock, std::string("unmoved")));
  EXPECT_EQ(status.fence, token->fence());
  ASSERT_TRUE(redis_.process(token->release()));
}

// A counter that lost its last value — evicted, or set back to an older one as a failover that
// dropped the latest grants leaves it — still gives each name a larger fence than it had: fences
// never fall below the server's clock, and every fence given was at most the clock of its grant.
TEST_F(FenceCounterTest, ACounterThatLostItsLastValueStillGivesLargerFences) {
  const auto lock = Lock<std::string>{"lost-counter", 10s, prefix_}.with_fencing();
  const auto permits =
      Semaphore<std::string>{"lost-counter-permits", 2, 10s, prefix_}.with_fencing();
  const auto grant_lock = [&] {
    auto token = redis_.process(lock.try_lock("ledger"));
    EXPECT_TRUE(token && token->fence());
    EXPECT_TRUE(token && redis_.process(token->release()));
    return token && token->fence() ? *token->fence() : 0;
  };
  const auto grant_permit = [&] {
    auto token = redis_.process(permits.try_acquire("export"));
    EXPECT_TRUE(token && token->fence());
    EXPECT_TRUE(token && redis_.process(token->release()));
    return token && token->fence() ? *token->fence() : 0;
  };
  const std::string counter = lock.server_fence_counter_key();
  const std::uint64_t first = grant_lock();
  server_->command({"DEL", counter});
  const std::uint64_t after_eviction = grant_lock();
  EXPECT_GT(after_eviction, first);
  server_->command({"SET", counter, std::to_string(first - 1000)});
  const std::uint64_t after_set_back = grant_lock();
  EXPECT_GT(after_set_back, after_eviction);
  EXPECT_EQ(get(counter), std::to_string(after_set_back));

  const std::uint64_t permit = grant_permit();
  server_->command({"DEL", permits.server_fence_counter_key()});
  EXPECT_GT(grant_permit(), permit);
}

// Data moved from a Redis Cluster (or counted by an earlier layout that kept one counter per slot
// on a single server too) leaves the name's slot counter behind: the server's own counter, which
// did not exist, counts from the clock, above the last fence the slot counter gave.
TEST_F(FenceCounterTest, AFenceAfterAMoveFromAClusterIsAboveTheSlotCountersLast) {
  const std::string prefix = "moved-in-" + std::to_string(unique_number());
  const Lock<std::string> lock = Lock<std::string>{"names", 10s, prefix}.with_fencing();
  const std::uint64_t cluster_last = testing::server_clock_us(*server_) - 1;
  server_->command({"SET", lock.fence_counter_key("invoice"), std::to_string(cluster_last)});
  ASSERT_EQ(server_->command({"EXISTS", lock.server_fence_counter_key()}).integer, 0);
  auto token = redis_.process(lock.try_lock("invoice"));
  ASSERT_TRUE(token && token->fence());
  EXPECT_GT(*token->fence(), cluster_last);
  EXPECT_EQ(get(lock.server_fence_counter_key()), std::to_string(*token->fence()));
  EXPECT_EQ(get(lock.fence_counter_key("invoice")), std::to_string(cluster_last)) << "left alone";
  ASSERT_TRUE(redis_.process(token->release()));
}

// 100 000 fenced names, each granted once: one counter on a single server, where the per-name
// layout left 100 000 (and a Redis Cluster keeps at most one per slot: tests/cluster).
TEST_F(FenceCounterTest, ManyFencedNamesLeaveOneCounterOnASingleServer) {
  const std::string prefix = "many-" + std::to_string(unique_number());
  const Lock<std::string> lock = Lock<std::string>{"names", 60s, prefix}.with_fencing();
  constexpr int kNames = 100'000;
  constexpr int kBatch = 1'000;
  // Batches of grants, each within its own time: a loaded machine (or a sanitizer) may take a
  // while, which is not what this test is about.
  ClientOptions options;
  options.command_timeout = 60s;
  Client client(server_->unix_url(), options);
  std::uint64_t last = 0;
  for (int start = 0; start < kNames; start += kBatch) {
    std::vector<TryLock<Lock<std::string>>> batch;
    for (int n = start; n < start + kBatch; ++n)
      batch.push_back(lock.try_lock(std::to_string(n)));
    for (auto& granted : client.process(batch)) {
      ASSERT_TRUE(granted.value());
      EXPECT_GT(*granted.value()->fence(), last) << "one counter: grants in order";
      last = *granted.value()->fence();
    }
  }
  const std::size_t counters = testing::count_keys(*server_, prefix + ":Fences*");
  EXPECT_EQ(counters, 1u);
  EXPECT_EQ(server_->command({"GET", lock.server_fence_counter_key()}).str, std::to_string(last));
  EXPECT_EQ(server_->command({"EXISTS", lock.own_fence_key("0")}).integer, 0);
  RecordProperty("fence_counters", static_cast<int>(counters));
  std::cout << kNames << " fenced names: " << counters << " fence counters\n";
}

}  // namespace
}  // namespace leasehold
