// The keep-alive's schedule counts from the token's deadline on leasehold::Clock: a token that was
// kept a while before its keep-alive started (work done first, an acquire whose reply came late) is
// extended in time, not a whole third of its TTL after the keep-alive starts; and a suspend of the
// host counts against the lease.
#include <gtest/gtest.h>

#include <thread>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisServer;

TEST(KeepAliveSchedule, WhileHeldKeepsATokenWithLittleOfItsTtlLeft) {
  RedisServer server;
  Client redis(server.unix_url());
  const Lock<std::string> lock("job", 1500ms);
  auto token = redis.process(lock.try_lock("report"));
  ASSERT_TRUE(token);
  const Clock::time_point first_deadline = token->deadline();
  // Kept for a while before the work starts: less than a third of the TTL is left.
  ASSERT_TRUE(eventually([&] { return token->valid_for(Clock::now()) < 400ms; }, 5s, 1ms));
  const Held<void> held = while_held(redis, *token, [&](std::stop_token stop) {
    // The work outlives the deadline the token had when it started.
    while (!stop.stop_requested() && Clock::now() < first_deadline + 300ms)
      std::this_thread::sleep_for(5ms);  // the work itself
  });
  EXPECT_FALSE(held.was_lost()) << "a live lease with "
                                << "less than a third of its TTL left was lost";
  EXPECT_GT(token->deadline(), first_deadline) << "the lease was never extended";
}

TEST(KeepAliveSchedule, WithLockKeepsALeaseWhoseAcquireReplyCameLate) {
  RedisServer server;
  Client redis(server.unix_url());
  Locker locker(redis);
  // The acquire's reply comes about 1 s after it was sent, so its lease has about 0.5 s left of
  // its 1.5 s TTL when the callback starts.
  server.command({"CLIENT", "PAUSE", "1000", "WRITE"});
  const auto called = Clock::now();
  bool ran = false;
  EXPECT_NO_THROW(locker.with_lock("report",
                                   [&](std::stop_token stop) {
                                     ran = true;
                                     while (!stop.stop_requested() &&
                                            Clock::now() < called + 2200ms)
                                       std::this_thread::sleep_for(5ms);  // the work itself
                                   },
                                   {.ttl = 1500ms}));
  EXPECT_TRUE(ran);
}

// A suspend of the host (simulated: Clock moves on, the monotonic clock does not) past the
// lease's TTL: the keep-alive notices within a timer slice of the wake-up, however far its next
// extension was.
TEST(KeepAliveSchedule, ASuspendPastTheTtlIsALossNoticedSoonAfterTheWakeUp) {
  RedisServer server;
  Client redis(server.unix_url());
  const Lock<std::string> lock("job", 60s);
  auto token = redis.process(lock.try_lock("report"));
  ASSERT_TRUE(token);
  std::chrono::steady_clock::time_point woke;
  std::chrono::steady_clock::time_point noticed;
  const Held<void> held = while_held(redis, *token, [&](std::stop_token stop) {
    detail::shift_clock(120s);  // the host slept for two minutes
    woke = std::chrono::steady_clock::now();
    // The work waits for its stop token, at most 10 s.
    eventually([&] { return stop.stop_requested(); }, 10s, 5ms);
    noticed = std::chrono::steady_clock::now();
  });
  EXPECT_TRUE(held.was_lost()) << "a lease whose TTL passed during a suspend was still held";
  // A slice (1 s) and scheduling slack; the next extension was 20 s away on the monotonic clock.
  EXPECT_LT(noticed - woke, 3s);
}

}  // namespace
}  // namespace leasehold
