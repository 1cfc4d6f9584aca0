// with_lock and Mutex against a real redis-server; connections and processes stand in for nodes.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <future>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "async_outcome.hpp"
#include "build_paths.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"
#include "shared_server.hpp"

extern char** environ;

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

void expect_throws_lost(const std::function<void()>& call, std::error_code expected_cause) {
  try {
    call();
    ADD_FAILURE() << "no LockLostError";
  } catch (const LockLostError& e) {
    EXPECT_EQ(e.code(), errc::lease_lost);
    EXPECT_EQ(e.cause(), expected_cause) << e.what();
  }
}

class WithLockTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "wl" + std::to_string(unique_number());
};

TEST_F(WithLockTest, ExcludesEightThreadsAndTwoProcessesOnOneKey) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  constexpr int kPerProcess = 50;
  std::vector<pid_t> workers;
  for (int p = 0; p < 2; ++p) {
    const std::string url = server_->unix_url();
    const std::string iterations = std::to_string(kPerProcess);
    std::vector<char*> argv = {const_cast<char*>(testing::build_paths::test_worker),
                               const_cast<char*>(url.c_str()), const_cast<char*>(name_.c_str()),
                               const_cast<char*>(iterations.c_str()), nullptr};
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    workers.push_back(pid);
  }
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      Client redis(server_->unix_url());
      Locker locker(redis);
      WithLockOptions options;
      options.retry_attempts = WithLockOptions::forever;
      options.retry_delay = 1ms;
      const std::string counter = name_ + ":counter";
      for (int i = 0; i < kPerThread; ++i) {
        locker.with_lock(
            name_,
            [&] {
              if (++inside > 1)
                ++overlaps;
              const Reply value = redis.process(Command{"GET", counter});
              const long long current = value.is_nil() ? 0 : std::stoll(value.str);
              std::this_thread::sleep_for(500us);  // widens the race window
              redis.process(Command{"SET", counter, std::to_string(current + 1)});
              --inside;
            },
            options);
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (pid_t pid : workers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(server_->command({"GET", name_ + ":counter"}).str,
            std::to_string(kThreads * kPerThread + 2 * kPerProcess))
      << "increments were lost: the critical sections overlapped";
}

TEST(WithLockRetries, DefaultsGiveUpAfterAboutTwoSecondsAndLeaveTheQueue) {
  RedisServer server;
  Client holder(server.unix_url());
  Client redis(server.unix_url());
  Locker locker(redis);
  ASSERT_TRUE(holder.process(TryLock<detail::WithLockTag>(locker.key("busy"), 30s)));
  bool ran = false;
  const auto start = Clock::now();
  try {
    locker.with_lock("busy", [&] { ran = true; });
    FAIL() << "no AcquireError";
  } catch (const AcquireError& e) {
    EXPECT_EQ(e.code(), errc::lock_busy);
    EXPECT_NE(std::string(e.what()).find("still held after 2000 ms (10 retries of 200 ms)"),
              std::string::npos)
        << e.what();
  }
  const auto waited = Clock::now() - start;
  EXPECT_FALSE(ran);
  EXPECT_GE(waited, 2s);
  EXPECT_LT(waited, 3s);
  EXPECT_TRUE(eventually([&] {
    return server.command({"EXISTS", detail::queue_key(locker.key("busy"))}).integer == 0;
  })) << "the waiter that gave up kept its place in the queue";
}

// The wait is told of the release: it ends at once, long before the next retry_delay.
TEST(WithLockRetries, AReleaseEndsTheWaitAtOnceNotAtTheNextRetry) {
  RedisServer server;
  Client holder(server.unix_url());
  Client redis(server.unix_url());
  Locker locker(redis);
  auto held = holder.process(TryLock<detail::WithLockTag>(locker.key("busy"), 30s));
  ASSERT_TRUE(held);
  Clock::time_point ran_at;
  std::thread waiter([&] {
    locker.with_lock("busy", [&] { ran_at = Clock::now(); },
                     {.retry_attempts = 3, .retry_delay = 5s});
  });
  ASSERT_TRUE(eventually([&] {
    return server.command({"ZCARD", detail::queue_key(locker.key("busy"))}).integer == 1;
  }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(holder.process(held->release()));
  waiter.join();
  EXPECT_LT(ran_at - released_at, 500ms);
}

// A busy lock seen by the one attempt of retry_attempts 0: no wait, no queue, one command.
TEST(WithLockRetries, ZeroRetryAttemptsMakesExactlyOneAttempt) {
  RedisServer server;
  Client holder(server.unix_url());
  Client redis(server.unix_url());
  Locker locker(redis);
  ASSERT_TRUE(holder.process(TryLock<detail::WithLockTag>(locker.key("busy"), 30s)));
  // One try: a SET ... NX ... GET, or (?compat=redis6) the script that stands for it, which finds
  // the key held and sets nothing.
  const auto tries = [&server] {
    return command_calls(server, "set") + command_calls(server, "eval");
  };
  const long long tries_before = tries();
  const long long scripts_before = command_calls(server, "evalsha");
  WithLockOptions once;
  once.retry_attempts = 0;
  EXPECT_THROW(locker.with_lock(
                   "busy", [] {}, once),
               AcquireError);
  EXPECT_EQ(tries() - tries_before, 1);
  EXPECT_EQ(command_calls(server, "evalsha"), scripts_before);
  EXPECT_EQ(server.command({"EXISTS", detail::queue_key(locker.key("busy"))}).integer, 0);
}

TEST_F(WithLockTest, ForeverWaitsAndThenRuns) {
  Client holder(server_->unix_url());
  Client redis(server_->unix_url());
  Locker locker(redis);
  // A crashed holder: its 300 ms lease is never extended or released.
  ASSERT_TRUE(holder.process(TryLock<detail::WithLockTag>(locker.key(name_), 300ms)));
  WithLockOptions forever;
  forever.retry_attempts = WithLockOptions::forever;
  forever.retry_delay = 20ms;
  const auto start = Clock::now();
  const int result = locker.with_lock(
      name_, [] { return 7; }, forever);
  EXPECT_EQ(result, 7);
  EXPECT_GE(Clock::now() - start, 250ms);
}

TEST_F(WithLockTest, ACallbackThreeTimesLongerThanTheTtlKeepsTheLock) {
  Client redis(server_->unix_url());
  Client contender_connection(server_->unix_url());
  Locker locker(redis);
  Locker contender(contender_connection);
  WithLockOptions options;
  options.ttl = 300ms;
  int contender_wins = 0;
  int contender_tries = 0;
  locker.with_lock(
      name_,
      [&] {
        const auto until = Clock::now() + 900ms;
        WithLockOptions once;
        once.retry_attempts = 0;
        while (Clock::now() < until) {
          try {
            contender.with_lock(
                name_, [] {}, once);
            ++contender_wins;
          } catch (const AcquireError&) {
          }
          ++contender_tries;
          std::this_thread::sleep_for(20ms);  // pacing
        }
      },
      options);
  EXPECT_EQ(contender_wins, 0);
  EXPECT_GT(contender_tries, 20);
}

TEST_F(WithLockTest, DeletingTheKeyYieldsLockLostErrorSoonAndStopsTheCallback) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  WithLockOptions options;
  options.ttl = 300ms;
  Clock::time_point deleted_at;
  Clock::time_point stop_seen_at;
  expect_throws_lost(
      [&] {
        locker.with_lock(
            name_,
            [&](std::stop_token stop) {
              server_->command({"DEL", locker.key(name_)});
              deleted_at = Clock::now();
              while (!stop.stop_requested() && Clock::now() - deleted_at < 5s)
                std::this_thread::sleep_for(1ms);
              stop_seen_at = Clock::now();
            },
            options);
      },
      std::error_code{});
  EXPECT_LT(stop_seen_at - deleted_at, 100ms + 150ms);  // ttl/3 + a round trip, with slack
}

TEST_F(WithLockTest, AnExtensionFailingWithARedisErrorIsTheCause) {
  RedisServer server;
  ClientOptions client_options;
  client_options.command_timeout = 100ms;
  Client redis(server.unix_url(), client_options);
  Locker locker(redis);
  WithLockOptions options;
  options.ttl = 400ms;
  expect_throws_lost(
      [&] {
        locker.with_lock(
            "paused",
            [&](std::stop_token stop) {
              server.pause();
              const auto start = Clock::now();
              while (!stop.stop_requested() && Clock::now() - start < 5s)
                std::this_thread::sleep_for(1ms);
              server.resume();
            },
            options);
      },
      make_error_code(errc::command_timeout));
}

TEST_F(WithLockTest, TheAsyncFormThrowsLockLostAtOnceWithoutWaitingForTheCallback) {
  asio::io_context io;
  Client redis(io.get_executor(), server_->unix_url());
  Locker locker(redis);
  WithLockOptions options;
  options.ttl = 300ms;
  std::optional<std::chrono::steady_clock::duration> thrown_after;
  std::error_code lost_cause{make_error_code(errc::invalid_argument)};
  bool callback_finished = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const auto start = Clock::now();
        try {
          co_await locker.async_with_lock(
              name_,
              [&]() -> asio::awaitable<void> {
                server_->command({"DEL", locker.key(name_)});
                // A slow callback: the caller must learn of the loss without waiting for it.
                asio::steady_timer slow(co_await asio::this_coro::executor, 2s);
                std::error_code ignored;
                co_await slow.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
                co_await slow.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
                callback_finished = true;
              },
              options);
        } catch (const LockLostError& e) {
          thrown_after = Clock::now() - start;
          lost_cause = e.cause();
        }
      },
      testing::rethrow_failure);
  io.run_for(1s);  // long enough for the loss, well short of the callback's 2 s
  ASSERT_TRUE(thrown_after.has_value());
  EXPECT_LT(*thrown_after, 100ms + 150ms);
  EXPECT_FALSE(lost_cause);
  EXPECT_FALSE(callback_finished);
  redis.close();
  io.run_for(5s);  // the cancelled callback settles; then nothing is left to run
  EXPECT_TRUE(io.stopped());
}

TEST_F(WithLockTest, ReentrantCallsMakeNoRoundTripThreeLevelsDeep) {
  RedisServer server;
  Client redis(server.unix_url());
  Locker locker(redis);
  std::vector<int> order;
  long long sets_inside = -1;
  long long evalshas_inside = -1;
  const long long sets_before = command_calls(server, "set");
  locker.with_lock("outer", [&] {
    order.push_back(1);
    const long long sets_at_1 = command_calls(server, "set");
    const long long evals_at_1 = command_calls(server, "evalsha");
    locker.with_lock("outer", [&] {
      order.push_back(2);
      locker.with_lock("outer", [&] { order.push_back(3); }, {.ttl = 1ms, .retry_attempts = 0});
    });
    sets_inside = command_calls(server, "set") - sets_at_1;
    evalshas_inside = command_calls(server, "evalsha") - evals_at_1;
    // A different key inside takes its own lock: one more SET.
    locker.with_lock("inner-other", [&] { order.push_back(4); });
  });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(sets_inside, 0) << "a nested call on the same key went to Redis";
  EXPECT_LE(evalshas_inside, 0 + 1) << "at most the keep-alive's own extension";
  EXPECT_EQ(command_calls(server, "set") - sets_before, 2);
}

TEST_F(WithLockTest, AChildThreadIsNotPartOfTheCallChain) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  bool child_refused = false;
  locker.with_lock(name_, [&] {
    std::thread child([&] {
      try {
        locker.with_lock(name_, [] {}, {.retry_attempts = 0});
      } catch (const AcquireError&) {
        child_refused = true;
      }
    });
    child.join();
  });
  EXPECT_TRUE(child_refused) << "another thread must wait for the lock like any other caller";
}

TEST_F(WithLockTest, AsyncReentrancyFollowsTheContextNotTheThread) {
  asio::io_context io;
  Client redis(io.get_executor(), server_->unix_url());
  Locker locker(redis);
  bool nested_ran = false;
  bool unrelated_refused = false;
  bool unrelated_finished = false;
  int done = 0;
  const std::string name = name_;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await locker.async_with_lock(name, [&](LockContext context) -> asio::awaitable<void> {
          // With the context: reentrant, at once.
          co_await locker.async_with_lock(context, name, [&]() -> asio::awaitable<void> {
            nested_ran = true;
            co_return;
          });
          // Let the unrelated coroutine run, interleaved on this same thread.
          asio::steady_timer pause(co_await asio::this_coro::executor, 300ms);
          co_await pause.async_wait(asio::use_awaitable);
        });
        if (++done == 2)
          redis.close();
      },
      testing::rethrow_failure);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer later(co_await asio::this_coro::executor, 50ms);
        co_await later.async_wait(asio::use_awaitable);
        try {
          // No context: not reentrant, even though it runs on the holder's thread.
          co_await locker.async_with_lock(name, []() -> asio::awaitable<void> { co_return; },
                                          {.retry_attempts = 0});
        } catch (const AcquireError&) {
          unrelated_refused = true;
        }
        unrelated_finished = true;
        if (++done == 2)
          redis.close();
      },
      testing::rethrow_failure);
  io.run_for(10s);
  EXPECT_TRUE(io.stopped());
  EXPECT_TRUE(nested_ran);
  EXPECT_TRUE(unrelated_finished);
  EXPECT_TRUE(unrelated_refused);
}

TEST_F(WithLockTest, MutexAndWithLockExcludeEachOtherAndCannotReleaseEachOthersLock) {
  Client redis(server_->unix_url());
  Client other(server_->unix_url());
  Locker locker(redis);
  Locker other_locker(other);
  Mutex mutex(other_locker, name_, {.ttl = 5s});
  {
    std::unique_lock hold(mutex);
    EXPECT_THROW(locker.with_lock(name_, [] {}, {.retry_attempts = 0}), AcquireError);
    // with_lock's release path cannot touch the Mutex's lease: a forged release is refused.
    const auto held = read_stored_lease(server_->command({"GET", locker.key(name_)}).str);
    EXPECT_EQ(held.id_hex.size(), 32u);
  }
  // Unlocked: with_lock gets it; meanwhile the Mutex cannot.
  locker.with_lock(name_, [&] {
    EXPECT_FALSE(mutex.try_lock());
    EXPECT_FALSE(mutex.try_lock_for(50ms));
    mutex.unlock();  // not locked by this Mutex: does nothing, the with_lock lease stays
    EXPECT_EQ(server_->command({"EXISTS", locker.key(name_)}).integer, 1);
  });
  std::scoped_lock both(mutex);
  EXPECT_FALSE(mutex.lost());
}

TEST_F(WithLockTest, AMutexHeldLongerThanItsTtlIsKeptAlive) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  Mutex mutex(locker, name_, {.ttl = 200ms});
  mutex.lock();
  const auto until = Clock::now() + 600ms;
  while (Clock::now() < until) {
    EXPECT_EQ(server_->command({"EXISTS", locker.key(name_)}).integer, 1);
    std::this_thread::sleep_for(50ms);  // pacing of the checks
  }
  EXPECT_FALSE(mutex.lost());
  mutex.unlock();
  EXPECT_EQ(server_->command({"EXISTS", locker.key(name_)}).integer, 0);
}

TEST_F(WithLockTest, AWaitingMutexIsToldOfTheUnlockAndTimedLocksEndOnTime) {
  Client redis(server_->unix_url());
  Client other(server_->unix_url());
  Locker locker(redis);
  Locker other_locker(other);
  Mutex first(locker, name_, {.ttl = 30s});
  Mutex second(other_locker, name_, {.ttl = 30s});
  first.lock();
  const auto timed_start = Clock::now();
  EXPECT_FALSE(second.try_lock_for(300ms));
  const auto timed = Clock::now() - timed_start;
  EXPECT_GE(timed, 300ms);
  EXPECT_LT(timed, 1s);
  Clock::time_point locked_at;
  std::thread waiter([&] {
    second.lock();
    locked_at = Clock::now();
  });
  ASSERT_TRUE(eventually([&] {
    return server_->command({"ZCARD", detail::queue_key(first.key())}).integer == 1;
  }));
  const Clock::time_point unlocked_at = Clock::now();
  first.unlock();
  waiter.join();
  EXPECT_LT(locked_at - unlocked_at, 500ms);
  second.unlock();
}

TEST_F(WithLockTest, ShutdownEndsAWaitAtOnceAndLeavesTheQueue) {
  Client holder(server_->unix_url());
  Client redis(server_->unix_url());
  Locker locker(redis);
  ASSERT_TRUE(holder.process(TryLock<detail::WithLockTag>(locker.key(name_), 30s)));
  Mutex mutex(locker, name_);
  std::optional<std::error_code> ended;
  std::thread waiter([&] {
    try {
      mutex.lock();
    } catch (const Error& e) {
      ended = e.code();
    }
  });
  const std::string queue = detail::queue_key(locker.key(name_));
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }));
  const auto start = Clock::now();
  locker.shutdown();
  waiter.join();
  EXPECT_LT(Clock::now() - start, 1s);
  EXPECT_EQ(ended, errc::closed);
  EXPECT_TRUE(eventually([&] { return server_->command({"EXISTS", queue}).integer == 0; }));
}

TEST_F(WithLockTest, ShutdownReleasesHeldLocksAtOnceAndLaterCallsNeverRun) {
  Client redis(server_->unix_url());
  Client other(server_->unix_url());
  Locker locker(redis);
  Locker contender(other);
  std::promise<void> inside;
  std::atomic<bool> stop_seen{false};
  std::thread holder([&] {
    try {
      locker.with_lock(name_,
                       [&](std::stop_token stop) {
                         inside.set_value();
                         while (!stop.stop_requested())
                           std::this_thread::sleep_for(1ms);
                         stop_seen = true;
                       },
                       {.ttl = 30s});
    } catch (const LockLostError&) {
    }
  });
  inside.get_future().wait();
  const auto start = Clock::now();
  locker.shutdown();
  // A contender gets the lock at once, not after the 30 s TTL.
  bool contender_ran = false;
  contender.with_lock(name_, [&] { contender_ran = true; }, {.retry_delay = 10ms});
  EXPECT_TRUE(contender_ran);
  EXPECT_LT(Clock::now() - start, 2s);
  holder.join();
  EXPECT_TRUE(stop_seen);

  // Later calls never run their callbacks; a sync call blocks until its stop token is requested.
  std::stop_source caller;
  std::atomic<bool> ran{false};
  std::atomic<bool> returned{false};
  std::thread late([&] {
    try {
      locker.with_lock(
          name_, [&] { ran = true; }, {}, caller.get_token());
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::closed);
    }
    returned = true;
  });
  std::this_thread::sleep_for(100ms);  // give a wrong implementation time to run the callback
  EXPECT_FALSE(returned.load());
  caller.request_stop();
  late.join();
  EXPECT_TRUE(returned.load());
  EXPECT_FALSE(ran.load());
}

TEST_F(WithLockTest, AStopTokenRequestedBeforeOrDuringTheWaitEndsItWithoutAHang) {
  Client holder(server_->unix_url());
  Client redis(server_->unix_url());
  Locker locker(redis);
  ASSERT_TRUE(holder.process(TryLock<detail::WithLockTag>(locker.key(name_), 30s)));
  std::stop_source already;
  already.request_stop();
  const auto start = Clock::now();
  EXPECT_THROW(locker.with_lock(
                   name_, [] {}, {.retry_attempts = WithLockOptions::forever}, already.get_token()),
               Error);
  EXPECT_LT(Clock::now() - start, 2s);
  std::stop_source later;
  std::thread canceller([&] {
    std::this_thread::sleep_for(50ms);  // cancel while it waits between attempts
    later.request_stop();
  });
  EXPECT_THROW(locker.with_lock(
                   name_, [] {}, {.retry_attempts = WithLockOptions::forever}, later.get_token()),
               Error);
  canceller.join();
  EXPECT_LT(Clock::now() - start, 4s);
}

struct MoveOnly {
  std::unique_ptr<int> value;
};

TEST_F(WithLockTest, CallbackResultsAndExceptionsPassThroughUnchanged) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  EXPECT_EQ(locker.with_lock(name_, [] { return std::string("result"); }), "result");
  MoveOnly moved = locker.with_lock(name_, [] { return MoveOnly{std::make_unique<int>(42)}; });
  EXPECT_EQ(*moved.value, 42);
  locker.with_lock(name_, [] {});
  struct Custom : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  try {
    locker.with_lock(name_, [] { throw Custom("my own failure"); });
    FAIL() << "no exception";
  } catch (const Custom& e) {
    EXPECT_STREQ(e.what(), "my own failure");
  }
  // And the lock was released as soon as the callback threw.
  EXPECT_EQ(server_->command({"EXISTS", locker.key(name_)}).integer, 0);
}

// The locker shuts down while the callback runs, and the callback settles right after: the
// caller's coroutine learns of both at once. The shutdown came first, so the callback did not end
// under the lock: lost, as the sync form says.
TEST_F(WithLockTest, AnAsyncCallbackThatSettlesJustAfterAShutdownIsLost) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  asio::io_context caller;  // not the client's I/O thread: shutdown() waits for its releases
  const testing::AsyncOutcome outcome =
      testing::run_to_outcome(caller, locker.async_with_lock(name_, [&]() -> asio::awaitable<int> {
        locker.shutdown();
        co_return 42;
      }));
  EXPECT_FALSE(outcome.value) << "async_with_lock returned " << *outcome.value
                              << " for a callback that ended after the locker shut down";
  const std::string lost_because = outcome.lost.value_or("");
  EXPECT_NE(lost_because.find("shut down"), std::string::npos) << lost_because;
}

// Callers on an io_context that several threads run, without a strand: each call's callback
// settling, its lease's shutdown report and the caller's coroutine may all run at once on
// different threads. Every call must end with its value or a loss (the TSan suite checks that
// they do so without a data race).
TEST_F(WithLockTest, AsyncCallsOnAMultiThreadedIoContextEndOnceAndRaceFree) {
  constexpr int kCalls = 48;
  Client redis(server_->unix_url());
  Locker locker(redis);
  asio::io_context io(4);
  std::atomic<int> inside{0};
  std::atomic<bool> go{false};
  std::atomic<int> settling{0};
  std::atomic<int> values{0};
  std::atomic<int> lost{0};
  std::atomic<int> wrong{0};
  for (int i = 0; i < kCalls; ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          try {
            const int value = co_await locker.async_with_lock(
                name_ + ":" + std::to_string(i), [&, i]() -> asio::awaitable<int> {
                  ++inside;
                  asio::steady_timer pause(co_await asio::this_coro::executor);
                  while (!go) {  // every call holds its lock before the shutdown
                    pause.expires_after(1ms);
                    co_await pause.async_wait(asio::use_awaitable);
                  }
                  // Settle in a spread around the shutdown: some before, some at, some after.
                  pause.expires_after(std::chrono::microseconds(250 * (i % 16)));
                  co_await pause.async_wait(asio::use_awaitable);
                  ++settling;
                  co_return i;
                });
            (value == i ? values : wrong)++;
          } catch (const LockLostError&) {
            ++lost;
          }
        },
        testing::rethrow_failure);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] { io.run(); });
  ASSERT_TRUE(eventually([&] { return inside.load() == kCalls; }, 10s));
  go = true;
  ASSERT_TRUE(eventually([&] { return settling.load() >= kCalls / 3; }, 10s));
  locker.shutdown();  // reports shutdown to every held lease while callbacks settle
  for (auto& thread : threads)
    thread.join();  // io.run() returns once every call has ended
  std::cout << values.load() << " calls returned their value, " << lost.load()
            << " were lost to the shutdown\n";
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(values.load() + lost.load(), kCalls) << "every call ends, once";
  // Settled calls release without waiting for the answer: their DELs may still be on the way.
  EXPECT_TRUE(eventually([&] {
    return server_->command({"KEYS", locker.key(name_ + ":*")}).elements.empty();
  })) << "no lock is left behind";
}

// The caller cancels its async_with_lock: it ends at once with operation_aborted, the callback is
// cancelled, and the lock is released when the callback settles.
TEST_F(WithLockTest, ACallerThatCancelsEndsTheCallAndTheCallbackAndTheLockIsReleased) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  asio::io_context io;
  asio::cancellation_signal caller;
  std::atomic<bool> inside{false};
  std::optional<std::error_code> callback_wait;
  std::optional<std::error_code> call_ended;
  asio::co_spawn(io,
                 locker.async_with_lock(
                     name_,
                     [&]() -> asio::awaitable<void> {
                       inside = true;
                       asio::steady_timer long_work(co_await asio::this_coro::executor, 30s);
                       std::error_code ec;
                       co_await long_work.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                       callback_wait = ec;
                     }),
                 asio::bind_cancellation_slot(caller.slot(), [&](std::exception_ptr error) {
                   try {
                     if (error)
                       std::rethrow_exception(error);
                     call_ended = std::error_code{};
                   } catch (const std::system_error& e) {
                     call_ended = e.code();
                   }
                 }));
  while (!inside && io.run_one_for(5s)) {
  }
  ASSERT_TRUE(inside.load());
  EXPECT_EQ(server_->command({"EXISTS", locker.key(name_)}).integer, 1);
  const auto start = Clock::now();
  caller.emit(asio::cancellation_type::terminal);  // on the io_context's thread, as Asio asks
  io.run_for(5s);
  ASSERT_TRUE(call_ended.has_value());
  EXPECT_EQ(*call_ended, asio::error::operation_aborted);
  ASSERT_TRUE(callback_wait.has_value()) << "the callback was not cancelled";
  EXPECT_EQ(*callback_wait, asio::error::operation_aborted);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_TRUE(eventually([&] {
    return server_->command({"EXISTS", locker.key(name_)}).integer == 0;
  })) << "the lock was not released";
  EXPECT_TRUE(io.stopped()) << "something was left running";
}

// True once a client's command waits in the paused server (CLIENT PAUSE WRITE blocks it).
bool acquire_is_waiting_in(const RedisServer& server) {
  return eventually([&] {
    return server.command({"INFO", "clients"}).str.find("blocked_clients:1") != std::string::npos;
  });
}

TEST(WithLockCancellation, ACallCancelledWhileItsAcquireIsInFlightNeverStartsAndGivesTheLeaseBack) {
  RedisServer server;  // paused by this test
  Client redis(server.unix_url());
  Locker locker(redis);
  asio::io_context io;
  asio::cancellation_signal caller;
  bool started = false;
  std::optional<std::error_code> call_ended;
  // Writes wait in the server until it is unpaused: the acquire is sent and cannot be answered.
  server.command({"CLIENT", "PAUSE", "10000", "WRITE"});
  asio::co_spawn(io,
                 locker.async_with_lock("job",
                                        [&]() -> asio::awaitable<void> {
                                          started = true;
                                          co_return;
                                        },
                                        {.ttl = 30s}),
                 asio::bind_cancellation_slot(caller.slot(), [&](std::exception_ptr error) {
                   try {
                     if (error)
                       std::rethrow_exception(error);
                     call_ended = std::error_code{};
                   } catch (const std::system_error& e) {
                     call_ended = e.code();
                   }
                 }));
  io.poll();  // the call runs up to its acquire, whose reply cannot come yet
  ASSERT_TRUE(acquire_is_waiting_in(server));
  ASSERT_FALSE(call_ended.has_value());
  caller.emit(asio::cancellation_type::terminal);  // on the io_context's thread, as Asio asks
  server.command({"CLIENT", "UNPAUSE"});           // the acquire runs and takes the lock
  io.run_for(5s);
  ASSERT_TRUE(call_ended.has_value()) << "the cancelled call never ended";
  EXPECT_EQ(*call_ended, asio::error::operation_aborted);
  EXPECT_FALSE(started) << "the callback started after its call was cancelled";
  // Given back at once, not left to its 30 s TTL.
  EXPECT_TRUE(eventually(
      [&] {
        return server.command({"EXISTS", locker.key("job")}).integer == 0;
      },
      5s))
      << "the lease the cancelled acquire took was not released";
}

TEST(WithLockCancellation, AStopTokenRequestedWhileTheAcquireIsInFlightNeverRunsTheCallback) {
  RedisServer server;  // paused by this test
  Client redis(server.unix_url());
  Locker locker(redis);
  std::stop_source caller;
  server.command({"CLIENT", "PAUSE", "10000", "WRITE"});
  // The acquire is in flight once the server has it waiting; then the caller gives up, and the
  // server goes on.
  std::thread cancel([&] {
    EXPECT_TRUE(acquire_is_waiting_in(server));
    caller.request_stop();
    server.command({"CLIENT", "UNPAUSE"});
  });
  bool ran = false;
  try {
    locker.with_lock(
        "job", [&] { ran = true; }, {.ttl = 30s}, caller.get_token());
    ADD_FAILURE() << "with_lock returned normally after its stop token was requested";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::closed) << e.what();
  }
  cancel.join();
  EXPECT_FALSE(ran) << "the callback ran after its call's stop token was requested";
  EXPECT_TRUE(eventually(
      [&] {
        return server.command({"EXISTS", locker.key("job")}).integer == 0;
      },
      5s))
      << "the lease taken while the stop was requested was not released";
}

TEST_F(WithLockTest, ASavedLockContextStopsVouchingOnceItsCallEnded) {
  Client redis(server_->unix_url());
  Locker locker(redis);
  Client other_redis(server_->unix_url());
  Locker other(other_redis);
  asio::io_context io;
  LockContext saved;
  bool inside_someone_elses_lock = false;
  bool refused = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await locker.async_with_lock(name_, [&](LockContext context) -> asio::awaitable<void> {
          EXPECT_TRUE(context.holds(&locker, locker.key(name_)));
          saved = context;  // kept beyond the callback
          co_return;
        });
        // Someone else holds the lock now; the saved context must not let a callback in.
        EXPECT_FALSE(saved.holds(&locker, locker.key(name_)));
        co_await other.async_with_lock(name_, [&]() -> asio::awaitable<void> {
          try {
            co_await locker.async_with_lock(saved, name_,
                                            [&]() -> asio::awaitable<void> {
                                              inside_someone_elses_lock = true;
                                              co_return;
                                            },
                                            {.retry_attempts = 0});
          } catch (const AcquireError&) {
            refused = true;
          }
        });
      },
      testing::rethrow_failure);
  io.run();
  EXPECT_FALSE(inside_someone_elses_lock) << "a saved context ran a callback inside another "
                                             "locker's critical section";
  EXPECT_TRUE(refused);
}

TEST_F(WithLockTest, AsyncResultsAndExceptionsPassThrough) {
  asio::io_context io;
  Client redis(io.get_executor(), server_->unix_url());
  Locker locker(redis);
  std::string result;
  std::string error;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        result = co_await locker.async_with_lock(
            name_, []() -> asio::awaitable<std::string> { co_return "async result"; });
        try {
          co_await locker.async_with_lock(name_, []() -> asio::awaitable<int> {
            throw std::logic_error("async failure");
            co_return 0;
          });
        } catch (const std::logic_error& e) {
          error = e.what();
        }
        redis.close();
      },
      testing::rethrow_failure);
  io.run_for(10s);
  EXPECT_EQ(result, "async result");
  EXPECT_EQ(error, "async failure");
}

}  // namespace
}  // namespace leasehold
