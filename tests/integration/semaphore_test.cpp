// Semaphores against a real redis-server: never more holders than permits, a crashed holder's
// permit back after its TTL and not before, permits that never resurrect, fencing numbers,
// waiting in turn told of each release, and a lowered permit count.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

constexpr WaitOptions kSlowRecheck{.recheck = 1900ms, .ticket_ttl = 2000ms};

class SemaphoreTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "s" + std::to_string(unique_number());
  Client redis_{server_->unix_url()};
  long long holders(const Semaphore<std::string>& semaphore) const {
    return server_->command({"ZCARD", semaphore.holders_key(name_)}).integer;
  }
  long long queued(const Semaphore<std::string>& semaphore) const {
    return server_->command({"ZCARD", detail::queue_key(semaphore.holders_key(name_))}).integer;
  }
};

TEST_F(SemaphoreTest, AtMostPermitsHoldersAndAReleasedPermitIsTakenAgain) {
  const Semaphore<std::string> exports{"exports", 3, 30s};
  std::vector<PermitToken<Semaphore<std::string>>> held;
  for (int i = 0; i < 3; ++i) {
    auto permit = redis_.process(exports.try_acquire(name_));
    ASSERT_TRUE(permit) << i;
    held.push_back(std::move(*permit));
  }
  EXPECT_FALSE(redis_.process(exports.try_acquire(name_)));
  EXPECT_EQ(holders(exports), 3);
  EXPECT_TRUE(redis_.process(held[1].release()));
  EXPECT_FALSE(redis_.process(held[1].release())) << "released twice";
  auto again = redis_.process(exports.try_acquire(name_));
  ASSERT_TRUE(again);
  EXPECT_FALSE(redis_.process(exports.try_acquire(name_)));
  EXPECT_TRUE(redis_.process(held[0].extend()));
  EXPECT_TRUE(redis_.process(again->release()));
}

TEST_F(SemaphoreTest, ACrashedHoldersPermitComesBackAfterItsTtlNeverEarlierAndNeverResurrects) {
  const Semaphore<std::string> jobs{"jobs", 1, 400ms};
  // The permit's TTL starts when the server grants it, after this moment and before the reply,
  // which a busy machine may deliver late: the bound is counted from before the request.
  const auto asked_at = Clock::now();
  auto crashed = redis_.process(jobs.try_acquire(name_));  // never released nor extended
  ASSERT_TRUE(crashed);
  std::optional<PermitToken<Semaphore<std::string>>> next;
  ASSERT_TRUE(eventually(
      [&] {
        next = redis_.process(jobs.try_acquire(name_));
        return next.has_value();
      },
      5s, 5ms));
  EXPECT_GE(Clock::now() - asked_at, 400ms - 20ms) << "the permit came back before its TTL";
  EXPECT_FALSE(redis_.process(crashed->extend())) << "an ended permit was resurrected";
  EXPECT_FALSE(redis_.process(crashed->release()));
  EXPECT_EQ(holders(jobs), 1);
  EXPECT_TRUE(redis_.process(next->release()));
}

TEST_F(SemaphoreTest, FencingNumbersGrowWithEachGrant) {
  const auto fenced = Semaphore<std::string>{"fenced", 2, 30s}.with_fencing();
  auto a = redis_.process(fenced.try_acquire(name_));
  auto b = redis_.process(fenced.try_acquire(name_));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->fence() && b->fence());
  EXPECT_LT(*a->fence(), *b->fence());
  EXPECT_TRUE(redis_.process(a->release()));
  auto c = acquire_for(redis_, fenced, name_, 1s);
  ASSERT_TRUE(c && c->fence());
  EXPECT_LT(*b->fence(), *c->fence());
  EXPECT_FALSE(
      redis_.process(Semaphore<std::string>{"plain", 2, 30s}.try_acquire(name_)).value().fence());
}

// Two permits held, three waiters queued: each release lets the next waiter in, in the order
// they started, at once (the recheck is far longer).
TEST_F(SemaphoreTest, WaitersGetFreedPermitsInTheOrderTheyStartedToldOfEachRelease) {
  const Semaphore<std::string> uploads{"uploads", 2, 30s};
  auto first = redis_.process(uploads.try_acquire(name_));
  auto second = redis_.process(uploads.try_acquire(name_));
  ASSERT_TRUE(first && second);
  std::mutex mutex;
  std::vector<int> order;
  std::vector<PermitToken<Semaphore<std::string>>> got;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] {
      auto permit = acquire_for(redis_, uploads, name_, 10s, kSlowRecheck);
      ASSERT_TRUE(permit) << i;
      std::lock_guard lock(mutex);
      order.push_back(i);
      got.push_back(std::move(*permit));
    });
    ASSERT_TRUE(eventually([&] { return queued(uploads) == i + 1; }));
  }
  const auto count = [&] {
    std::lock_guard lock(mutex);
    return order.size();
  };
  const auto released_at = Clock::now();
  ASSERT_TRUE(redis_.process(first->release()));
  ASSERT_TRUE(eventually([&] { return count() == 1; }));
  ASSERT_TRUE(redis_.process(second->release()));
  ASSERT_TRUE(eventually([&] { return count() == 2; }));
  EXPECT_LT(Clock::now() - released_at, 1s) << "a waiter was not told of a release";
  EXPECT_EQ(holders(uploads), 2);
  {
    std::lock_guard lock(mutex);
    ASSERT_TRUE(redis_.process(got[0].release()));
  }
  for (auto& waiter : waiters)
    waiter.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  for (auto& permit : got)
    redis_.process(permit.release());
  EXPECT_EQ(queued(uploads), 0);
}

// A release that frees two permits at once (a crash of two holders: their leases end together)
// lets two waiters in: a grant that leaves a permit free tells the next waiter.
TEST_F(SemaphoreTest, EveryFreePermitReachesAWaiter) {
  const Semaphore<std::string> pool{"pool", 2, 300ms};
  ASSERT_TRUE(redis_.process(pool.try_acquire(name_)));
  ASSERT_TRUE(redis_.process(pool.try_acquire(name_)));
  std::atomic<int> in{0};
  std::vector<std::thread> waiters;
  const Semaphore<std::string> longer{"pool", 2, 30s};
  for (int i = 0; i < 2; ++i)
    waiters.emplace_back([&] {
      auto permit = acquire_for(redis_, longer, name_, 10s, kSlowRecheck);
      if (permit)
        ++in;
    });
  const auto start = Clock::now();
  for (auto& waiter : waiters)
    waiter.join();
  EXPECT_EQ(in.load(), 2);
  EXPECT_LT(Clock::now() - start, 1500ms) << "the second waiter waited for the recheck";
  EXPECT_EQ(holders(longer), 2);
}

TEST_F(SemaphoreTest, ManyThreadsNeverHoldMoreThanThePermits) {
  const Semaphore<std::string> limited{"limited", 3, 5s};
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::atomic<int> over{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      Client redis(server_->unix_url());
      for (int i = 0; i < 30; ++i) {
        auto permit = acquire_for(redis, limited, name_, 20s);
        ASSERT_TRUE(permit);
        const int now = ++inside;
        if (now > 3)
          ++over;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        if (holders(limited) > 3)
          ++over;
        --inside;
        EXPECT_TRUE(redis.process(permit->release()));
      }
    });
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(over.load(), 0);
  EXPECT_GE(most.load(), 2) << "the permits were never shared";
  EXPECT_EQ(holders(limited), 0);
  EXPECT_EQ(queued(limited), 0);
}

// Lowering the count: holders beyond it keep their permits until they end; an acquire with the
// lower count is granted only once fewer than it hold one.
TEST_F(SemaphoreTest, ALoweredPermitCountLetsHoldersFinishAndAdmitsNoOneUntilBelowIt) {
  const Semaphore<std::string> three{"count", 3, 30s};
  const Semaphore<std::string> one{"count", 1, 30s};
  std::vector<PermitToken<Semaphore<std::string>>> held;
  for (int i = 0; i < 3; ++i)
    held.push_back(*redis_.process(three.try_acquire(name_)));
  EXPECT_FALSE(redis_.process(one.try_acquire(name_)));
  EXPECT_TRUE(redis_.process(held[0].release()));
  EXPECT_TRUE(redis_.process(held[1].release()));
  EXPECT_FALSE(redis_.process(one.try_acquire(name_))) << "1 holder, a count of 1";
  EXPECT_TRUE(redis_.process(held[2].extend())) << "a holder beyond the count keeps its permit";
  EXPECT_TRUE(redis_.process(held[2].release()));
  auto permit = redis_.process(one.try_acquire(name_));
  ASSERT_TRUE(permit);
  EXPECT_TRUE(redis_.process(permit->release()));
}

TEST_F(SemaphoreTest, WhileHeldKeepsAPermitPastItsTtl) {
  const Semaphore<std::string> short_lived{"short", 1, 300ms};
  auto permit = redis_.process(short_lived.try_acquire(name_));
  ASSERT_TRUE(permit);
  const auto held = while_held(redis_, *permit, [&](std::stop_token) {
    std::this_thread::sleep_for(900ms);  // the work: three TTLs long
    return holders(short_lived);
  });
  ASSERT_TRUE(held);
  EXPECT_EQ(held.value(), 1);
  EXPECT_TRUE(redis_.process(permit->release()));
}

TEST(SemaphoreDeclaration, ZeroPermitsIsAnError) {
  EXPECT_THROW((Semaphore<std::string>{"none", 0, 1s}), Error);
}

}  // namespace
}  // namespace leasehold
