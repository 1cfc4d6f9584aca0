// What waiting in turn costs Redis, against a real redis-server: waiters behind the first two
// keep their places without trying (a renewal of their ticket alone), and a head that died costs
// the ones behind it its grace, not its ticket — for a Lock, an RwLock and a Semaphore.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

// The tries each place made that Redis refused.
class TriesByPlace : public Observer {
 public:
  void on_wait(const WaitEvent& e) override {
    std::lock_guard lock(mutex_);
    if (e.position >= tries_.size())
      tries_.resize(e.position + 1);
    ++tries_[e.position];
  }
  // Refused tries at places [from, to].
  std::size_t tries(std::size_t from, std::size_t to) const {
    std::lock_guard lock(mutex_);
    std::size_t sum = 0;
    for (std::size_t p = from; p <= to && p < tries_.size(); ++p)
      sum += tries_[p];
    return sum;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::size_t> tries_;
};

long long queued(const testing::RedisServer& server, const std::string& lock_key) {
  return server.command({"ZCARD", detail::queue_key(lock_key)}).integer;
}

class WaitCostTest : public testing::SharedServerTest {
 protected:
  // Takes `name_` and queues two places behind it that nobody renews or takes (waiters that
  // died), with minute-long tickets: the holder's token, or nothing if a step failed.
  std::optional<LockToken<Lock<std::string>>> hold_with_two_dead_behind(
      const Lock<std::string>& locks) {
    auto holder = redis_.process(locks.try_lock(name_));
    for (int i = 0; i < 2 && holder; ++i)
      if (redis_.process(try_lock_in_turn(locks, name_, WaitTicket{LeaseId::generate(), 60s}))
              .token)
        return std::nullopt;  // a dead place took the lock: no longer the case under test
    return holder;
  }

  std::string name_ = "c" + std::to_string(unique_number());
  Client redis_{server_->unix_url()};
};

// Eight waiters on a held lock, with a short recheck and tickets that run out in 2 s: the head
// and the one behind it try at every recheck; the six others only renew their places, and keep
// them while the first two try again and again.
TEST_F(WaitCostTest, WaitersBehindTheFirstTwoKeepTheirPlacesWithoutTrying) {
  const Lock<std::string> locks{"cost", 30s};
  const std::string key = locks.key(name_);
  auto observer = std::make_shared<TriesByPlace>();
  ClientOptions options;
  options.observer = observer;
  Client waiting(server_->unix_url(), options);
  auto holder = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(holder);
  constexpr int kWaiters = 8;
  constexpr WaitOptions kOptions{.recheck = 200ms, .ticket_ttl = 2000ms};
  std::atomic<int> granted{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] {
      auto token = lock_for(waiting, locks, name_, 30s, kOptions);
      if (token) {
        ++granted;
        waiting.process(token->release());
      }
    });
    ASSERT_TRUE(eventually([&] { return queued(*server_, key) == i + 1; }));
  }
  // Past a ticket's TTL: a waiter whose place was not renewed would have lost it.
  ASSERT_TRUE(eventually([&] { return observer->tries(1, 2) >= 2 * 15; }, 10s));
  EXPECT_EQ(queued(*server_, key), kWaiters) << "a waiter behind the first two lost its place";
  // Each of the six tried when it queued and when its subscription was confirmed, no more.
  EXPECT_LE(observer->tries(3, kWaiters), 2u * (kWaiters - 2));
  ASSERT_TRUE(redis_.process(holder->release()));
  for (auto& waiter : waiters)
    waiter.join();
  EXPECT_EQ(granted.load(), kWaiters);
}

// The head is a waiter whose process stopped answering: the release tells it and the one behind
// it; that one takes the lock once the head's grace is over.
TEST_F(WaitCostTest, ALockWaiterBehindADeadHeadGetsInAfterTheGrace) {
  const Lock<std::string> locks{"cost", 30s};
  auto holder = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(holder);
  const WaitTicket dead{LeaseId::generate(), 60s};
  ASSERT_FALSE(redis_.process(try_lock_in_turn(locks, name_, dead)).token);
  Clock::time_point got_at;
  std::thread next([&] {
    auto token = lock_for(redis_, locks, name_, 10s, {.grace = 200ms});
    got_at = Clock::now();
    ASSERT_TRUE(token);
    EXPECT_TRUE(redis_.process(token->release()));
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, locks.key(name_)) == 2; }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  next.join();
  EXPECT_GE(got_at - released_at, 190ms);
  EXPECT_LT(got_at - released_at, 200ms + 500ms);
}

// The first two of the queue died: the release tells no one alive. The third notices the lock
// free at its recheck, gives each dead one its grace, and gets in.
TEST_F(WaitCostTest, AWaiterBehindTwoDeadOnesGetsInAtItsRecheckAndTwoGraces) {
  const Lock<std::string> locks{"cost", 30s};
  auto holder = hold_with_two_dead_behind(locks);
  ASSERT_TRUE(holder);
  Clock::time_point got_at;
  std::thread third([&] {
    auto token =
        lock_for(redis_, locks, name_, 10s, {.recheck = 500ms, .ticket_ttl = 60s, .grace = 100ms});
    got_at = Clock::now();
    ASSERT_TRUE(token);
    EXPECT_TRUE(redis_.process(token->release()));
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, locks.key(name_)) == 3; }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  third.join();
  EXPECT_GE(got_at - released_at, 190ms) << "two graces at least";
  EXPECT_LT(got_at - released_at, 500ms + 2 * 100ms + 800ms);
}

// The same, within a ticket's life after the client's subscriber connection was cut and came
// back (as a failover does, which may bring back places whose waiters had left): the waiter no
// longer trusts a release to reach someone alive, and looks every `recheck_unwatched` instead of
// every `recheck` — whether it queued before the reconnect or after it.
class WaitAfterReconnectTest : public WaitCostTest, public ::testing::WithParamInterface<bool> {
 protected:
  long long subscribers(const std::string& channel) {
    return server_->command({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer;
  }
  // Kills the client's subscriber connection, watching `channel`, and waits for it to be back.
  void reconnect_subscriber(const std::string& channel) {
    ASSERT_TRUE(eventually([&] { return subscribers(channel) == 1; }));
    EXPECT_EQ(server_->command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1);
    ASSERT_TRUE(eventually([&] { return subscribers(channel) == 1; }));
  }
};

TEST_P(WaitAfterReconnectTest, AWaiterPassesTwoDeadOnesWithinItsUnwatchedRecheck) {
  const bool queued_before = GetParam();
  const Lock<std::string> locks{"cost", 30s};
  auto holder = hold_with_two_dead_behind(locks);
  ASSERT_TRUE(holder);
  // Another name's waiter makes the subscriber connection when the third queues after it.
  auto other = redis_.process(locks.try_lock(name_ + "-other"));
  ASSERT_TRUE(other);
  std::thread other_waiter;
  if (!queued_before) {
    other_waiter =
        std::thread([&] { EXPECT_TRUE(lock_for(redis_, locks, name_ + "-other", 20s)); });
    reconnect_subscriber(detail::released_channel(locks.key(name_ + "-other")));
  }
  Clock::time_point got_at;
  std::thread third([&] {
    auto token = lock_for(redis_, locks, name_, 20s,
                          {.recheck_unwatched = 300ms, .ticket_ttl = 60s, .grace = 100ms});
    got_at = Clock::now();
    ASSERT_TRUE(token);
    EXPECT_TRUE(redis_.process(token->release()));
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, locks.key(name_)) == 3; }));
  if (queued_before)
    reconnect_subscriber(detail::released_channel(locks.key(name_)));
  else
    ASSERT_TRUE(
        eventually([&] { return subscribers(detail::released_channel(locks.key(name_))) == 1; }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  third.join();
  EXPECT_GE(got_at - released_at, 190ms) << "two graces at least";
  EXPECT_LT(got_at - released_at, 300ms + 2 * 100ms + 1000ms);
  ASSERT_TRUE(redis_.process(other->release()));
  if (other_waiter.joinable())
    other_waiter.join();
}

INSTANTIATE_TEST_SUITE_P(QueuedBeforeOrAfter, WaitAfterReconnectTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "QueuedBefore" : "QueuedAfter";
                         });

// A waiter in a process of its own (leasehold-test-worker wait), SIGKILLed once queued.
class DeadWaiter {
 public:
  DeadWaiter(const std::string& kind, const std::string& url, const std::string& name,
             const std::string& dir)
      : process_({testing::build_paths::test_worker, "wait", kind, url, name}, dir) {}
  void kill() {
    process_.signal(SIGKILL);
    EXPECT_EQ(process_.wait(), 128 + SIGKILL);
  }

 private:
  testing::ChildProcess process_;
};

// A waiter of `kind` queued in a process of its own and killed there, then `in_turn` waited for
// with a 200 ms grace behind it: from the release of `holder` to the grant.
template <class Token, class HolderToken>
Clock::duration wait_behind_a_dead_one(const testing::RedisServer& server, Client& redis,
                                       const std::string& kind, const std::string& name,
                                       const std::string& queue, HolderToken& holder,
                                       const InTurn<Token>& in_turn) {
  DeadWaiter dead(kind, server.unix_url(), name, server.dir());
  const auto queued = [&](long long count) {
    return eventually([&] { return server.command({"ZCARD", queue}).integer == count; });
  };
  EXPECT_TRUE(queued(1));
  dead.kill();
  Clock::time_point got_at;
  std::thread next([&] {
    auto token = wait_for(redis, in_turn, 10s, {.grace = 200ms});
    got_at = Clock::now();
    EXPECT_TRUE(token);
    if (token) {
      EXPECT_TRUE(redis.process(token->release()));
    }
  });
  EXPECT_TRUE(queued(2));
  const Clock::time_point released_at = Clock::now();
  EXPECT_TRUE(redis.process(holder.release()));
  next.join();
  return got_at - released_at;
}

// The head of an RwLock's queue is a reader that died; the writer behind it gets in a grace
// after the writer holding the lock releases it.
TEST_F(WaitCostTest, AWriterBehindADeadReaderGetsInAfterTheGrace) {
  const RwLock<std::string> locks{"worker", 30s};
  auto holder = redis_.process(locks.try_write(name_));
  ASSERT_TRUE(holder);
  const Clock::duration waited = wait_behind_a_dead_one(
      *server_, redis_, "read", name_, "leasehold:RwLock:{worker:" + name_ + "}:w:queue", *holder,
      locks.write_in_turn(name_));
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 200ms + 500ms);
}

// The head of a one-permit Semaphore's queue died; the waiter behind it gets the permit a grace
// after the holder gives it back.
TEST_F(WaitCostTest, APermitWaiterBehindADeadOneGetsInAfterTheGrace) {
  const Semaphore<std::string> permits{"worker", 1, 30s};
  auto holder = redis_.process(permits.try_acquire(name_));
  ASSERT_TRUE(holder);
  const Clock::duration waited = wait_behind_a_dead_one(
      *server_, redis_, "permit", name_, "leasehold:Semaphore:{worker:" + name_ + "}:h:queue",
      *holder, permits.in_turn(name_));
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 200ms + 500ms);
}

}  // namespace
}  // namespace leasehold
