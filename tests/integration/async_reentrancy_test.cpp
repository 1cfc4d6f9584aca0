// async_with_lock's call chain without a LockContext: a call made from inside a callback (directly,
// or from a coroutine the callback awaits) on a key the chain holds runs at once, with no Redis
// round trip; another coroutine, even on the same thread, and a coroutine the callback spawns,
// wait for the lock like any other caller.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::RedisServer;

asio::awaitable<void> pause_for(std::chrono::milliseconds duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

TEST(AsyncReentrancy, ANestedCallOnTheSameKeyRunsAtOnceWithoutARoundTrip) {
  RedisServer server;
  Client redis(server.unix_url());
  Locker locker(redis);
  asio::io_context io;  // the caller's: the client has its own thread
  std::vector<int> order;
  long long sets_inside = -1;
  long long grandchild_sets = -1;
  bool other_saw_outer = false;
  const long long sets_before = command_calls(server, "set");
  // A coroutine the callback awaits: part of the callback's call chain.
  const auto step = [&]() -> asio::awaitable<void> {
    co_await locker.async_with_lock("outer",
                                    [&]() -> asio::awaitable<void> {
                                      order.push_back(3);
                                      co_return;
                                    },
                                    {.ttl = 1ms, .retry_attempts = 0});
  };
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await locker.async_with_lock("outer", [&]() -> asio::awaitable<void> {
          order.push_back(1);
          const long long sets_at_1 = command_calls(server, "set");
          // Directly, with no context: reentrant. Its options do not apply.
          const int value =
              co_await locker.async_with_lock("outer",
                                              [&]() -> asio::awaitable<int> {
                                                order.push_back(2);
                                                co_await step();  // and from a coroutine it awaits
                                                co_return 42;
                                              },
                                              {.ttl = 1ms, .retry_attempts = 0});
          EXPECT_EQ(value, 42);
          sets_inside = command_calls(server, "set") - sets_at_1;
          // A different key takes its own lock; inside it, the outer key is still this chain's.
          co_await locker.async_with_lock(
              "inner-other", [&](LockContext context) -> asio::awaitable<void> {
                order.push_back(4);
                other_saw_outer = context.holds(&locker, locker.key("outer"));
                const long long sets_at_4 = command_calls(server, "set");
                co_await locker.async_with_lock("outer",
                                                [&]() -> asio::awaitable<void> {
                                                  order.push_back(5);
                                                  co_return;
                                                },
                                                {.retry_attempts = 0});
                grandchild_sets = command_calls(server, "set") - sets_at_4;
              });
        });
      },
      testing::rethrow_failure);
  io.run_for(20s);
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(sets_inside, 0) << "a nested call on the same key went to Redis";
  EXPECT_EQ(grandchild_sets, 0) << "a call two levels down on the outer key went to Redis";
  EXPECT_TRUE(other_saw_outer) << "the inner call's context does not hold the outer key";
  EXPECT_EQ(command_calls(server, "set") - sets_before, 2) << "outer and inner-other, once each";
  EXPECT_EQ(server.command({"EXISTS", locker.key("outer")}).integer, 0);
}

TEST(AsyncReentrancy, IndependentCoroutinesOnOneThreadNeverEnterEachOthersSection) {
  RedisServer server;
  asio::io_context io;  // one thread runs the client and both coroutines
  Client redis(io.get_executor(), server.unix_url());
  Locker locker(redis);
  bool holding = false;
  bool holder_done = false;
  std::optional<bool> independent_refused;
  std::optional<bool> spawned_refused;
  bool entered_someone_elses_section = false;
  int done = 0;
  const auto contend = [&](std::optional<bool>& refused) -> asio::awaitable<void> {
    try {
      co_await locker.async_with_lock("job",
                                      [&]() -> asio::awaitable<void> {
                                        entered_someone_elses_section = !holder_done;
                                        co_return;
                                      },
                                      {.retry_attempts = 0});
      refused = false;
    } catch (const AcquireError&) {
      refused = true;
    }
  };
  const auto finish = [&] {
    if (++done == 2)
      redis.close();
  };
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await locker.async_with_lock("job", [&]() -> asio::awaitable<void> {
          holding = true;
          // A coroutine it spawns (on its own executor) is not part of its call chain.
          asio::co_spawn(co_await asio::this_coro::executor, contend(spawned_refused),
                         asio::detached);
          co_await pause_for(300ms);  // the other coroutines run meanwhile, on this thread
          holder_done = true;
        });
        finish();
      },
      testing::rethrow_failure);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (!holding)
          co_await pause_for(1ms);
        co_await contend(independent_refused);
        finish();
      },
      testing::rethrow_failure);
  io.run_for(20s);
  EXPECT_TRUE(io.stopped());
  ASSERT_TRUE(independent_refused.has_value());
  EXPECT_TRUE(*independent_refused) << "an independent coroutine on the holder's thread got in";
  ASSERT_TRUE(spawned_refused.has_value());
  EXPECT_TRUE(*spawned_refused) << "a coroutine the callback spawned got in";
  EXPECT_FALSE(entered_someone_elses_section);
}

}  // namespace
}  // namespace leasehold
