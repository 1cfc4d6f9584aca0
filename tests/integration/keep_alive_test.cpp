// KeepAlive and LeaseGuard against a real redis-server: a kept lease outlives its TTL, its loss is
// reported once (the stop token requested at that moment, the cause kept), stop() ends it without
// a loss, and a guard releases its lease or leaves it to the Locker that revoked it.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <optional>
#include <stop_token>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

class KeepAliveTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "ka" + std::to_string(unique_number());
  Lock<std::string> locks_{"keepalive", 300ms};
};

TEST(KeepAliveDefault, KeepsNothing) {
  KeepAlive none;
  EXPECT_FALSE(none.lost());
  EXPECT_FALSE(none.held());
  EXPECT_FALSE(none.cause());
  EXPECT_FALSE(none.stop_token().stop_possible());
  none.stop();  // a no-op
  EXPECT_FALSE(none.lost());
}

TEST_F(KeepAliveTest, KeepsALeaseThreeTimesLongerThanItsTtl) {
  Client redis(server_->unix_url());
  auto token = redis.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  const Clock::time_point first_deadline = token->deadline();
  KeepAlive keep_alive(redis, *token);
  const auto until = Clock::now() + 900ms;
  // Three TTLs later the lease is still ours: nobody else can take it meanwhile.
  Client contender(server_->unix_url());
  ASSERT_TRUE(eventually([&] { return Clock::now() >= until; }, 5s, 20ms));
  EXPECT_FALSE(contender.process(locks_.try_lock(name_)));
  EXPECT_TRUE(keep_alive.held());
  EXPECT_FALSE(keep_alive.lost());
  EXPECT_GT(token->deadline(), first_deadline + 500ms) << "the deadline never moved";
  keep_alive.stop();
  EXPECT_TRUE(redis.process(token->release()));
}

TEST_F(KeepAliveTest, ALossIsReportedOnceWithTheStopTokenRequestedAtIt) {
  Client redis(server_->unix_url());
  auto token = redis.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  KeepAlive keep_alive(redis, *token);
  std::atomic<int> stops{0};
  std::atomic<bool> lost_when_stopped{false};
  std::stop_callback count(keep_alive.stop_token(), [&] {
    lost_when_stopped = keep_alive.lost();  // the report is complete when the stop is requested
    ++stops;
  });
  server_->command({"DEL", locks_.key(name_)});  // taken away behind its back
  ASSERT_TRUE(eventually([&] { return keep_alive.lost(); }, 2s));
  EXPECT_TRUE(keep_alive.stop_token().stop_requested());
  // lost() turns true just before the stop is requested, on the client's thread: the callback
  // may still be running when this thread sees it.
  ASSERT_TRUE(eventually([&] { return stops.load() == 1; }, 2s));
  EXPECT_TRUE(lost_when_stopped.load());
  EXPECT_FALSE(keep_alive.cause())
      << "expired or taken over is not an error: " << keep_alive.cause().message();
  EXPECT_FALSE(keep_alive.held());
  // Past its deadline nothing more is reported, and nothing extends it any more.
  ASSERT_TRUE(eventually([&] { return token->expired(); }, 2s));
  const long long evalshas = command_calls(*server_, "evalsha");
  EXPECT_FALSE(eventually([&] { return command_calls(*server_, "evalsha") > evalshas; }, 300ms))
      << "a lost lease is still being extended";
  EXPECT_EQ(stops.load(), 1);
  keep_alive.stop();  // after the loss: changes nothing
  EXPECT_TRUE(keep_alive.lost());
}

TEST_F(KeepAliveTest, StopEndsItWithoutALossAndExtendsNoMore) {
  Client redis(server_->unix_url());
  auto token = redis.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  KeepAlive keep_alive(redis, *token);
  keep_alive.stop();
  // No more extensions: the lease runs out on the server at its TTL.
  EXPECT_TRUE(eventually(
      [&] {
        return server_->command({"EXISTS", locks_.key(name_)}).integer == 0;
      },
      2s))
      << "a stopped keep-alive went on extending";
  ASSERT_TRUE(eventually([&] { return token->expired(); }, 2s));
  // Past the deadline it is not held, but no loss was reported: it was stopped first.
  EXPECT_FALSE(keep_alive.held());
  EXPECT_FALSE(keep_alive.lost());
  EXPECT_FALSE(keep_alive.stop_token().stop_requested());
}

TEST(KeepAliveUnreachable, TheCauseIsTheErrorOfTheLastExtensionAtTheDeadline) {
  RedisServer server;
  ClientOptions options;
  options.command_timeout = 100ms;
  Client redis(server.unix_url(), options);
  const Lock<std::string> locks("keepalive", 400ms);
  auto token = redis.process(locks.try_lock("job"));
  ASSERT_TRUE(token);
  KeepAlive keep_alive(redis, *token);
  server.pause();
  const bool lost = eventually([&] { return keep_alive.lost(); }, 3s);
  const Clock::time_point noticed = Clock::now();
  server.resume();
  ASSERT_TRUE(lost);
  EXPECT_EQ(keep_alive.cause(), errc::command_timeout) << keep_alive.cause().message();
  // Uncertain until the deadline: reported then, not before.
  EXPECT_GE(noticed, token->deadline());
  EXPECT_LT(noticed - token->deadline(), 150ms);
}

TEST_F(KeepAliveTest, AClosedClientIsALossAtItsFirstExtensionWithClosedAsTheCause) {
  Client redis(server_->unix_url());
  const Lock<std::string> locks("keepalive", 900ms);
  auto token = redis.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  redis.close();  // it will never answer again
  KeepAlive keep_alive(redis, *token);
  // The first extension is due a third of the TTL after the grant; its failure is the loss, long
  // before the deadline (waiting for it would only keep the client's thread).
  ASSERT_TRUE(eventually([&] { return keep_alive.lost(); }, 2s));
  EXPECT_LT(Clock::now(), token->deadline());
  EXPECT_EQ(keep_alive.cause(), errc::closed) << keep_alive.cause().message();
}

TEST_F(KeepAliveTest, MovingAKeepAliveOverAnotherStopsTheOther) {
  Client redis(server_->unix_url());
  auto first = redis.process(locks_.try_lock(name_ + ":1"));
  auto second = redis.process(locks_.try_lock(name_ + ":2"));
  ASSERT_TRUE(first && second);
  KeepAlive keep_alive(redis, *first);
  keep_alive = KeepAlive(redis, *second);
  // The first lease runs out at its TTL; the second is still kept after three TTLs.
  EXPECT_TRUE(eventually(
      [&] {
        return server_->command({"EXISTS", locks_.key(name_ + ":1")}).integer == 0;
      },
      2s));
  const auto until = Clock::now() + 900ms;
  ASSERT_TRUE(eventually([&] { return Clock::now() >= until; }, 5s, 20ms));
  EXPECT_TRUE(keep_alive.held());
  EXPECT_EQ(server_->command({"EXISTS", locks_.key(name_ + ":2")}).integer, 1);
}

TEST_F(KeepAliveTest, ALeaseGuardReleasesAtTheEndAndKeepsTheLeaseUntilThen) {
  Client redis(server_->unix_url());
  auto token = redis.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  const std::string id = token->id().hex();
  const std::string value = token->value();  // the id and this process's identity
  {
    LeaseGuard guard(redis, std::move(*token));
    ASSERT_TRUE(guard);
    EXPECT_EQ(guard.id().hex(), id);
    EXPECT_EQ(guard.key(), locks_.key(name_));
    EXPECT_FALSE(guard.fence());
    const auto until = Clock::now() + 700ms;
    ASSERT_TRUE(eventually([&] { return Clock::now() >= until; }, 5s, 20ms));
    EXPECT_TRUE(guard.held());
    EXPECT_EQ(server_->command({"GET", locks_.key(name_)}).str, value);
  }  // released here, without waiting for the TTL
  EXPECT_EQ(server_->command({"EXISTS", locks_.key(name_)}).integer, 0);
}

TEST_F(KeepAliveTest, AsyncReleaseReturnsWithTheKeyFreeAndACancelledCoroutineStillReleases) {
  Client redis(server_->unix_url());
  asio::io_context io;  // the caller's: the client has its own thread
  std::optional<long long> exists_after;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto token = co_await redis.async_process(locks_.try_lock(name_), asio::use_awaitable);
        EXPECT_TRUE(token);
        LeaseGuard guard(redis, std::move(*token));
        co_await guard.async_release();
        // Read on another connection: the key is free the moment the release returns.
        exists_after = server_->command({"EXISTS", locks_.key(name_)}).integer;
        EXPECT_FALSE(guard);
        co_await guard.async_release();  // nothing is left to release
      },
      testing::rethrow_failure);
  io.run_for(10s);
  ASSERT_TRUE(io.stopped());
  EXPECT_EQ(exists_after, 0);

  // A coroutine whose caller gave up before the release: the release goes out all the same.
  io.restart();
  auto token = redis.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  LeaseGuard guard(redis, std::move(*token));
  asio::cancellation_signal give_up;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        give_up.emit(asio::cancellation_type::terminal);
        co_await guard.async_release();
      },
      asio::bind_cancellation_slot(give_up.slot(), [](std::exception_ptr) {}));
  io.run_for(10s);
  ASSERT_TRUE(io.stopped());
  EXPECT_FALSE(guard);
  EXPECT_TRUE(eventually(
      [&] {
        return server_->command({"EXISTS", locks_.key(name_)}).integer == 0;
      },
      2s))
      << "a cancelled coroutine's release was never sent";
}

TEST_F(KeepAliveTest, ALockerShutdownRevokesAGuardAndReleasesItsLease) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  auto token = redis.process(locker.try_lock_query(name_, 30s));
  ASSERT_TRUE(token);
  LeaseGuard guard(locker, std::move(*token));
  ASSERT_TRUE(guard);
  EXPECT_FALSE(guard.revoked());
  EXPECT_FALSE(guard.stop_token().stop_requested());
  locker.shutdown();
  EXPECT_TRUE(guard.revoked());
  EXPECT_TRUE(guard.stop_token().stop_requested());
  EXPECT_FALSE(guard.held());
  EXPECT_FALSE(guard.keep_alive().lost()) << "a revoked lease is not lost";
  EXPECT_EQ(server_->command({"EXISTS", locker.key(name_)}).integer, 0)
      << "the shutdown did not release it";
  guard.release();  // the locker released it: nothing is left to do
  EXPECT_FALSE(guard);
}

TEST_F(KeepAliveTest, AGuardOnALockerThatShutDownHoldsNothingAndGivesTheLeaseBack) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  auto token = redis.process(locker.try_lock_query(name_, 30s));
  ASSERT_TRUE(token);
  locker.shutdown();
  const LeaseGuard guard(locker, std::move(*token));
  EXPECT_FALSE(guard);
  EXPECT_TRUE(eventually(
      [&] {
        return server_->command({"EXISTS", locker.key(name_)}).integer == 0;
      },
      2s))
      << "the lease taken while the locker shut down was not given back";
}

}  // namespace
}  // namespace leasehold
