// The hold budget (max_hold) against a real redis-server: with_lock, Mutex, while_held and a
// KeepAlive stop extending when it is spent, ask the work to stop, and say so with a cause of
// their own; the lease then runs out at its TTL.
#include <gtest/gtest.h>

#include <string>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class HoldBudgetTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "budget" + std::to_string(unique_number());
  Client redis_{server_->unix_url()};
  Locker locker_{redis_};
};

TEST_F(HoldBudgetTest, WithLockStopsTheCallbackAtMaxHoldAndThrowsItsOwnCause) {
  const Clock::time_point started = Clock::now();
  Clock::time_point stopped_at{};
  try {
    locker_.with_lock(name_,
                      [&](std::stop_token stop) {
                        // A callback that would hang, but watches its stop token.
                        EXPECT_TRUE(eventually([&] { return stop.stop_requested(); }, 5s, 5ms));
                        stopped_at = Clock::now();
                      },
                      {.ttl = 300ms, .retry_attempts = 0, .max_hold = 400ms});
    ADD_FAILURE() << "no LockLostError";
  } catch (const LockLostError& e) {
    EXPECT_EQ(e.cause(), errc::hold_budget_exceeded);
    EXPECT_NE(std::string(e.what()).find("max_hold"), std::string::npos) << e.what();
  }
  // Extended past its 300 ms TTL until the budget, and stopped at it.
  EXPECT_GE(stopped_at - started, 400ms);
  EXPECT_LT(stopped_at - started, 1400ms);
  EXPECT_EQ(server_->command({"EXISTS", locker_.key(name_)}).integer, 0) << "released at the end";
}

TEST_F(HoldBudgetTest, AKeepAliveStopsExtendingAtTheBudgetAndTheLeaseRunsOut) {
  const Lock<std::string> locks{"budget", 300ms};
  auto token = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  KeepAlive keep_alive(redis_, *token, 500ms);
  ASSERT_TRUE(eventually([&] { return keep_alive.stop_token().stop_requested(); }, 5s, 5ms));
  EXPECT_TRUE(keep_alive.lost());
  EXPECT_EQ(keep_alive.cause(), errc::hold_budget_exceeded);
  // Extended no more: the key runs out within its TTL (it would live on if extensions went on).
  EXPECT_GT(server_->command({"PTTL", locks.key(name_)}).integer, 0) << "kept alive until then";
  EXPECT_TRUE(eventually(
      [&] {
        return server_->command({"EXISTS", locks.key(name_)}).integer == 0;
      },
      2s, 10ms));
}

TEST_F(HoldBudgetTest, AMutexIsLostWithTheBudgetCauseAndSaysSoAfterUnlock) {
  Mutex mutex(locker_, name_, {.ttl = 300ms, .max_hold = 300ms});
  mutex.lock();
  EXPECT_FALSE(mutex.lost());
  EXPECT_TRUE(eventually([&] { return mutex.lost(); }, 5s, 5ms));
  EXPECT_EQ(mutex.cause(), errc::hold_budget_exceeded);
  mutex.unlock();
  EXPECT_TRUE(mutex.lost());
  EXPECT_EQ(mutex.cause(), errc::hold_budget_exceeded);
}

TEST_F(HoldBudgetTest, WhileHeldIsLostWithTheBudgetCause) {
  const Lock<std::string> locks{"budget-while", 300ms};
  auto token = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  const Held<void> held = while_held(redis_, *token, 300ms, [](std::stop_token stop) {
    EXPECT_TRUE(eventually([&] { return stop.stop_requested(); }, 5s, 5ms));
  });
  EXPECT_TRUE(held.was_lost());
  EXPECT_EQ(held.loss_cause(), errc::hold_budget_exceeded);
}

TEST_F(HoldBudgetTest, ANegativeBudgetIsRefusedAndZeroIsNone) {
  EXPECT_THROW(locker_.with_lock(name_, [] {}, {.max_hold = -1ms}), Error);
  // Zero: no budget; held past several TTLs without a loss.
  const auto until = Clock::now() + 500ms;
  locker_.with_lock(
      name_, [&] { EXPECT_TRUE(eventually([&] { return Clock::now() >= until; }, 5s, 10ms)); },
      {.ttl = 150ms, .retry_attempts = 0, .max_hold = 0ms});
}

}  // namespace
}  // namespace leasehold
