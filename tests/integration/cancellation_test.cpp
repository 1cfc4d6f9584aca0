// Cancelling one async call against a real, private redis-server: a call that was not sent yet
// leaves the queue and never runs; one that was sent ends at once with operation_aborted (terminal
// cancellation only), and an acquire among them releases what it may have taken.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <future>
#include <optional>
#include <string>
#include <system_error>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisServer;

// What one callback-completed call ended with.
struct Ended {
  std::promise<std::error_code> error;
  std::future<std::error_code> future = error.get_future();
  // The error, or timed_out if the call had not ended within `limit`.
  std::error_code within(std::chrono::milliseconds limit) {
    if (future.wait_for(limit) != std::future_status::ready)
      return make_error_code(std::errc::timed_out);
    return future.get();
  }
};

TEST(Cancellation, ACallNotSentYetLeavesTheQueueAndNeverRuns) {
  const std::string key = testing::test_prefix() + ":counter";
  // Calls queue while the client connects to a server that is not there yet.
  const int port = testing::free_port();
  ClientOptions options;
  options.connect_timeout = 200ms;
  options.command_timeout = 5s;
  Client redis("redis://127.0.0.1:" + std::to_string(port), options);
  asio::cancellation_signal cancel;
  Ended ended;
  redis.async_process(Command{"INCR", key},
                      asio::bind_cancellation_slot(cancel.slot(), [&](std::error_code ec, Reply) {
                        ended.error.set_value(ec);
                      }));
  cancel.emit(asio::cancellation_type::total);  // the strictest kind: nothing may have happened
  EXPECT_EQ(ended.within(2s), std::error_code(asio::error::operation_aborted));
}

TEST(Cancellation, ACallInFlightEndsAtOnceAndAnAcquireReleasesWhatItTook) {
  RedisServer server;
  Client redis(server.unix_url());
  Lock<std::string> locks("cancel", 30s);
  const std::string key = locks.key("job");
  redis.process(Command{"PING"});  // connected, and nothing in flight: the next call goes out
  server.pause();                  // at once, and stays unanswered until resume()
  asio::cancellation_signal cancel;
  Ended ended;
  redis.async_process(locks.try_lock("job"),
                      asio::bind_cancellation_slot(cancel.slot(), [&](std::error_code ec, auto) {
                        ended.error.set_value(ec);
                      }));
  // Partial and total cancellation may not end a call that was sent: it may have run.
  cancel.emit(asio::cancellation_type::partial);
  EXPECT_EQ(ended.within(300ms), std::errc::timed_out) << "a sent call ended at a partial cancel";
  const auto cancelled_at = Clock::now();
  cancel.emit(asio::cancellation_type::terminal);
  EXPECT_EQ(ended.within(1s), std::error_code(asio::error::operation_aborted));
  EXPECT_LT(Clock::now() - cancelled_at, 1s);
  server.resume();
  // The acquire ran once the server went on; the release sent behind it undid it.
  EXPECT_TRUE(eventually(
      [&] {
        return server.command({"EXISTS", key}).integer == 0;
      },
      5s))
      << "a cancelled acquire left its lease behind";
  EXPECT_TRUE(redis.process(locks.try_lock("job"))) << "the key is free, and the client works on";
}

TEST(Cancellation, AnAwaitedCallLosesARaceWithATimerAndTheConnectionGoesOn) {
  RedisServer server;
  Client redis(server.unix_url());
  Lock<std::string> locks("cancel", 30s);
  const std::string key = locks.key("job");
  redis.process(Command{"PING"});  // connected, and nothing in flight
  asio::io_context io;
  std::optional<bool> timer_won;
  server.pause();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        asio::steady_timer timer(io, 200ms);
        const auto winner =
            co_await (redis.async_process(locks.try_lock("job"), asio::use_awaitable) ||
                      timer.async_wait(asio::use_awaitable));
        timer_won = winner.index() == 1;
      },
      testing::rethrow_failure);
  io.run_for(10s);
  EXPECT_TRUE(io.stopped()) << "the cancelled acquire held up the race";
  EXPECT_EQ(timer_won, true);
  server.resume();
  EXPECT_TRUE(eventually(
      [&] {
        return server.command({"EXISTS", key}).integer == 0;
      },
      5s))
      << "a cancelled acquire left its lease behind";
  EXPECT_TRUE(redis.process(locks.try_lock("job"))) << "the key is free, and the client works on";
}

}  // namespace
}  // namespace leasehold
