// Locker::with_locks against a real redis-server: a callback under several names at once, as one
// lease (lock_set.hpp), with with_lock's rules for waiting, losses, reentrancy and shutdown.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class WithLocksTest : public testing::SharedServerTest {
 protected:
  std::string name(const std::string& what) const { return what + "-" + std::to_string(number_); }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }

  int number_ = unique_number();
  Client redis_{server_->unix_url()};
};

TEST_F(WithLocksTest, TheCallbackRunsWithEveryNameHeldAsOneLeaseAndEachNamesFence) {
  Locker locker(redis_, "wls", Fencing::on);
  const std::vector<std::string> names{name("sku-3"), name("sku-1"), name("sku-3")};
  std::map<std::string, std::uint64_t> fences;
  const int result = locker.with_locks(names, [&] {
    const std::string value = get(locker.key(names[0]));
    EXPECT_FALSE(value.empty());
    EXPECT_EQ(get(locker.key(names[1])), value) << "one lease value in every key";
    for (const std::string& held : names)
      fences[held] = locker.fence(held).value_or(0);
    return 7;
  });
  EXPECT_EQ(result, 7);
  ASSERT_EQ(fences.size(), 2u);
  for (const auto& [held, fence] : fences)
    EXPECT_GE(fence, 1u) << held;
  EXPECT_FALSE(exists(locker.key(names[0])));
  EXPECT_FALSE(exists(locker.key(names[1])));
  EXPECT_FALSE(locker.fence(names[0])) << "no fence outside the callback";
  // A name's next fence is larger.
  locker.with_lock(names[1],
                   [&] { EXPECT_GT(locker.fence(names[1]).value_or(0), fences[names[1]]); });
}

TEST_F(WithLocksTest, ABusyNameKeepsTheCallbackOutAndTakesNothing) {
  Locker locker(redis_, "wls");
  Locker other(redis_, "wls");
  const std::string free_name = name("free"), busy_name = name("busy");
  std::promise<void> held;
  std::promise<void> done;
  std::thread holder([&] {
    other.with_lock(busy_name, [&] {
      held.set_value();
      done.get_future().wait();
    });
  });
  held.get_future().wait();
  bool ran = false;
  try {
    locker.with_locks({free_name, busy_name}, [&] { ran = true; }, {.retry_attempts = 0});
    ADD_FAILURE() << "no AcquireError";
  } catch (const AcquireError& e) {
    EXPECT_EQ(e.code(), errc::lock_busy);
    EXPECT_NE(std::string(e.what()).find(busy_name), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ran);
  EXPECT_FALSE(exists(locker.key(free_name))) << "nothing taken";

  // Waiting: the set is taken once the busy name is released, and nothing is held meanwhile.
  std::atomic<bool> ran_later{false};
  std::thread waiter([&] {
    locker.with_locks({busy_name, free_name}, [&] { ran_later = true; },
                      {.retry_attempts = 100, .retry_delay = 100ms});
  });
  const std::string queue = detail::queue_key(locker.key(busy_name));
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }, 5s));
  EXPECT_FALSE(exists(locker.key(free_name))) << "a waiting set holds nothing";
  done.set_value();
  holder.join();
  waiter.join();
  EXPECT_TRUE(ran_later);
}

TEST_F(WithLocksTest, ThreadsOnOverlappingNamesInOppositeOrdersNeverDeadlockNorOverlap) {
  Locker locker(redis_, "wls");
  const std::vector<std::string> pool{name("a"), name("b"), name("c"), name("d")};
  std::mutex mutex;
  std::map<std::string, int> holders;
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 15; ++round) {
        std::vector<std::string> names{pool[static_cast<std::size_t>((t + round) % 4)],
                                       pool[static_cast<std::size_t>((t + round + 1) % 4)]};
        if (t % 2 == 1)
          std::swap(names[0], names[1]);
        locker.with_locks(names,
                          [&] {
                            const std::lock_guard guard(mutex);
                            for (const std::string& held : names)
                              if (holders[held]++ > 0)
                                ++overlaps;
                            for (const std::string& held : names)
                              --holders[held];
                          },
                          {.retry_attempts = WithLockOptions::forever});
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(overlaps.load(), 0);
}

TEST_F(WithLocksTest, NestedCallsOnHeldNamesRunAtOnceAndOnSomeOfThemAreRefused) {
  Locker locker(redis_, "wls");
  const std::string a = name("a"), b = name("b"), c = name("c");
  int inner_runs = 0;
  locker.with_locks({a, b}, [&] {
    locker.with_lock(a, [&] { ++inner_runs; });
    locker.with_locks({b, a}, [&] { ++inner_runs; });
    try {
      locker.with_locks({b, c}, [&] { ++inner_runs; }, {.retry_attempts = 0});
      ADD_FAILURE() << "a set of held and unheld names was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
  });
  EXPECT_EQ(inner_runs, 2);
  // A set inside a single name's call that holds all of it.
  locker.with_lock(a, [&] { locker.with_locks({a}, [&] { ++inner_runs; }); });
  EXPECT_EQ(inner_runs, 3);
}

TEST_F(WithLocksTest, ANameLostWhileTheCallbackRunsStopsItAndThrowsLockLost) {
  Locker locker(redis_, "wls");
  const std::string a = name("a"), b = name("b");
  bool stopped = false;
  try {
    locker.with_locks({a, b},
                      [&](std::stop_token stop) {
                        server_->command({"DEL", locker.key(b)});  // as after an expiry
                        stopped = eventually([&] { return stop.stop_requested(); }, 5s);
                      },
                      {.ttl = 300ms});
    ADD_FAILURE() << "no LockLostError";
  } catch (const LockLostError& e) {
    EXPECT_EQ(e.code(), errc::lease_lost);
    EXPECT_NE(std::string(e.what()).find(a), std::string::npos) << e.what();
  }
  EXPECT_TRUE(stopped);
  EXPECT_FALSE(exists(locker.key(a))) << "the other name was given back";
}

TEST_F(WithLocksTest, ShutdownReleasesEveryNameOfARunningCall) {
  auto locker = std::make_unique<Locker>(redis_, "wls");
  const std::string a = name("a"), b = name("b");
  std::promise<void> running;
  std::thread call([&] {
    try {
      locker->with_locks({a, b}, [&](std::stop_token stop) {
        running.set_value();
        eventually([&] { return stop.stop_requested(); }, 10s);
      });
    } catch (const LockLostError&) {
    }
  });
  running.get_future().wait();
  locker->shutdown();
  EXPECT_FALSE(exists(locker->key(a)));
  EXPECT_FALSE(exists(locker->key(b)));
  call.join();
}

TEST_F(WithLocksTest, BadNamesAndRawKeysAreRefused) {
  Locker locker(redis_, "wls");
  EXPECT_THROW(locker.with_locks({}, [] {}), Error);
  EXPECT_THROW(locker.with_locks({name("a"), ""}, [] {}), Error);
  Locker raw(redis_, raw_keys);
  try {
    raw.with_locks({name("a"), name("b")}, [] {});
    ADD_FAILURE() << "raw keys took a set";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
  }
}

}  // namespace
}  // namespace leasehold
