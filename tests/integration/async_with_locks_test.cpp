// Locker::async_with_locks against a real redis-server: a coroutine callback under several names
// at once, as one lease, with async_with_lock's rules for waiting, losses, reentrancy (by the call
// chain's LockContext) and cancellation.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class AsyncWithLocksTest : public testing::SharedServerTest {
 protected:
  std::string name(const std::string& what) const { return what + "-" + std::to_string(number_); }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }

  // Runs `call` on io_ until it ends; its exception, if any, rethrown.
  template <class T>
  T run(asio::awaitable<T> call) {
    std::optional<T> value;
    std::exception_ptr thrown;
    asio::co_spawn(io_, std::move(call), [&](std::exception_ptr error, T result) {
      thrown = error;
      if (!error)
        value = std::move(result);
    });
    io_.restart();
    while (!value && !thrown && io_.run_one_for(10s) > 0) {
    }
    if (thrown)
      std::rethrow_exception(thrown);
    EXPECT_TRUE(value) << "the call did not end within 10 s";
    return value.value_or(T{});
  }

  int number_ = unique_number();
  asio::io_context io_;
  Client redis_{io_.get_executor(), server_->unix_url()};
};

TEST_F(AsyncWithLocksTest, TheCallbackRunsWithEveryNameHeldAndItsContextGivesEachFence) {
  Locker locker(redis_, "awls", Fencing::on);
  const std::string a = name("a"), b = name("b");
  std::map<std::string, std::uint64_t> fences;
  const int result =
      run(locker.async_with_locks({b, a, b}, [&](LockContext context) -> asio::awaitable<int> {
        const std::string value = get(locker.key(a));
        EXPECT_FALSE(value.empty());
        EXPECT_EQ(get(locker.key(b)), value) << "one lease value in every key";
        fences[a] = context.fence(locker, a).value_or(0);
        fences[b] = context.fence(locker, b).value_or(0);
        co_return 7;
      }));
  EXPECT_EQ(result, 7);
  EXPECT_GE(fences[a], 1u);
  EXPECT_GE(fences[b], 1u);
  EXPECT_FALSE(exists(locker.key(a)));
  EXPECT_FALSE(exists(locker.key(b)));
  // A name's next fence is larger.
  const std::uint64_t next =
      run(locker.async_with_lock(b, [&](LockContext context) -> asio::awaitable<std::uint64_t> {
        co_return context.fence(locker, b).value_or(0);
      }));
  EXPECT_GT(next, fences[b]);
}

TEST_F(AsyncWithLocksTest, NestedCallsOnHeldNamesRunAtOnceAndOnSomeOfThemAreRefused) {
  Locker locker(redis_, "awls");
  const std::string a = name("a"), b = name("b"), c = name("c");
  int inner_runs = 0;
  std::optional<std::error_code> refused;
  // Built out here: g++ 12 rejects a braced list of strings inside a coroutine lambda.
  const std::vector<std::string> b_a{b, a}, b_c{b, c};
  run(locker.async_with_locks({a, b}, [&](LockContext context) -> asio::awaitable<int> {
    // By the context passed on, and by the callback's own coroutine (no context).
    co_await locker.async_with_lock(context, a, [&]() -> asio::awaitable<void> {
      ++inner_runs;
      co_return;
    });
    co_await locker.async_with_locks(b_a, [&]() -> asio::awaitable<void> {
      ++inner_runs;
      co_return;
    });
    try {
      co_await locker.async_with_locks(context, b_c,
                                       [&]() -> asio::awaitable<void> {
                                         ++inner_runs;
                                         co_return;
                                       },
                                       {.retry_attempts = 0});
    } catch (const Error& e) {
      refused = e.code();
    }
    co_return 0;
  }));
  EXPECT_EQ(inner_runs, 2);
  EXPECT_EQ(refused, make_error_code(errc::invalid_argument))
      << "a set of held and unheld names would wait for its own caller";
  EXPECT_FALSE(exists(locker.key(c)));
}

// Coroutines on one thread take overlapping pairs of names in opposite orders, each pausing while
// it holds them: all of them finish (no deadlock) and no name ever has two holders.
TEST_F(AsyncWithLocksTest, OverlappingCallsInOppositeOrdersNeverDeadlockNorOverlap) {
  Locker locker(redis_, "awls");
  const std::vector<std::string> pool{name("a"), name("b"), name("c")};
  std::map<std::string, int> holders;
  int overlaps = 0;
  int finished = 0;
  constexpr int kCalls = 12;
  for (int call = 0; call < kCalls; ++call) {
    std::vector<std::string> names{pool[static_cast<std::size_t>(call % 3)],
                                   pool[static_cast<std::size_t>((call + 1) % 3)]};
    if (call % 2 == 1)
      std::swap(names[0], names[1]);
    asio::co_spawn(io_,
                   locker.async_with_locks(names,
                                           [&, names]() -> asio::awaitable<void> {
                                             for (const std::string& held : names)
                                               if (holders[held]++ > 0)
                                                 ++overlaps;
                                             asio::steady_timer work(
                                                 co_await asio::this_coro::executor, 5ms);
                                             co_await work.async_wait(asio::use_awaitable);
                                             for (const std::string& held : names)
                                               --holders[held];
                                           },
                                           {.retry_attempts = WithLockOptions::forever}),
                   [&](std::exception_ptr error) {
                     EXPECT_FALSE(error);
                     ++finished;
                   });
  }
  const auto deadline = Clock::now() + 20s;
  while (finished < kCalls && Clock::now() < deadline && io_.run_one_for(1s) > 0) {
  }
  EXPECT_EQ(finished, kCalls);
  EXPECT_EQ(overlaps, 0);
}

TEST_F(AsyncWithLocksTest, ANameLostThrowsLockLostAtOnceAndTheOthersAreGivenBack) {
  Locker locker(redis_, "awls");
  const std::string a = name("a"), b = name("b");
  std::optional<std::string> lost;
  bool callback_finished = false;
  const auto start = Clock::now();
  try {
    run(locker.async_with_locks({a, b},
                                [&]() -> asio::awaitable<int> {
                                  server_->command({"DEL", locker.key(b)});  // as after an expiry
                                  // A slow callback: the caller learns of the loss without waiting
                                  // for it.
                                  asio::steady_timer slow(co_await asio::this_coro::executor, 5s);
                                  std::error_code ignored;
                                  co_await slow.async_wait(
                                      asio::redirect_error(asio::use_awaitable, ignored));
                                  callback_finished = !ignored;
                                  co_return 0;
                                },
                                {.ttl = 300ms}));
  } catch (const LockLostError& e) {
    lost = e.what();
  }
  ASSERT_TRUE(lost) << "no LockLostError";
  EXPECT_LT(Clock::now() - start, 3s) << "the call waited for the callback";
  EXPECT_NE(lost->find(a), std::string::npos) << *lost;
  EXPECT_FALSE(callback_finished);
  // The cancelled callback settles on io_, and its release is sent from there.
  io_.restart();
  EXPECT_TRUE(eventually(
      [&] {
        io_.poll();
        return !exists(locker.key(a));
      },
      5s))
      << "the other name was given back";
}

// A caller that cancels while the call waits in turn for a busy name: operation_aborted, and no
// name taken, no place left in the busy name's queue.
TEST_F(AsyncWithLocksTest, ACallCancelledWhileItWaitsLeavesNoKeyAndNoPlace) {
  Client other_client(server_->unix_url());
  Locker other(other_client, "awls");
  Locker locker(redis_, "awls");
  const std::string free_name = name("free"), busy_name = name("busy");
  // Another holder's lease on the busy name, held by its token.
  auto busy = other_client.process(other.try_lock_query(busy_name, 10s));
  ASSERT_TRUE(busy);
  asio::cancellation_signal caller;
  std::optional<std::exception_ptr> ended;
  bool ran = false;
  asio::co_spawn(io_,
                 locker.async_with_locks({free_name, busy_name},
                                         [&]() -> asio::awaitable<void> {
                                           ran = true;
                                           co_return;
                                         },
                                         {.retry_attempts = WithLockOptions::forever}),
                 asio::bind_cancellation_slot(caller.slot(),
                                              [&](std::exception_ptr error) { ended = error; }));
  const std::string queue = detail::queue_key(locker.key(busy_name));
  const auto places = [&] { return server_->command({"ZCARD", queue}).integer; };
  // Waiting in turn: the busy name's queue holds this call's place.
  ASSERT_TRUE(eventually([&] {
    io_.poll();
    return places() == 1;
  }));
  caller.emit(asio::cancellation_type::terminal);
  while (!ended && io_.run_one_for(5s) > 0) {
  }
  ASSERT_TRUE(ended);
  ASSERT_TRUE(*ended);
  try {
    std::rethrow_exception(*ended);
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted);
  }
  EXPECT_FALSE(ran);
  EXPECT_FALSE(exists(locker.key(free_name))) << "nothing taken";
  EXPECT_TRUE(eventually([&] {
    io_.poll();
    return places() == 0;
  })) << "no place left in the queue";
  EXPECT_TRUE(other_client.process(busy->release()));
}

TEST_F(AsyncWithLocksTest, NoNamesAnEmptyNameAndRawKeysAreRefused) {
  Locker locker(redis_, "awls");
  Locker raw(redis_, raw_keys);
  const auto refusal = [&](Locker& with, std::vector<std::string> names) -> std::error_code {
    try {
      run(with.async_with_locks(std::move(names), []() -> asio::awaitable<int> { co_return 0; }));
    } catch (const Error& e) {
      return e.code();
    }
    return {};
  };
  EXPECT_EQ(refusal(locker, {}), errc::invalid_argument);
  EXPECT_EQ(refusal(locker, {name("a"), ""}), errc::invalid_argument);
  EXPECT_EQ(refusal(raw, {name("a"), name("b")}), errc::invalid_argument);
  EXPECT_FALSE(exists(locker.key(name("a"))));
}

}  // namespace
}  // namespace leasehold
