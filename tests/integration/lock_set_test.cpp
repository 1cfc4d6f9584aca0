// Lock sets: several names of one Lock as one lease. All or none; one value in every key;
// extend, release and while_held cover every name; a lost name loses the lease; a wait never
// holds a name while it waits, so sets given in opposite orders never deadlock.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <future>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class LockSetTest : public testing::SharedServerTest {
 protected:
  LockSetTest() : redis_(server_->unix_url()) {}

  long long exists(const std::string& key) { return server_->command({"EXISTS", key}).integer; }
  std::string get(const std::string& key) { return server_->command({"GET", key}).str; }

  Client redis_;
};

TEST_F(LockSetTest, TakesEveryNameOrNone) {
  constexpr Lock<std::string> lock{"set-all", 10s};
  const LockSet<Lock<std::string>> set(lock, {"c", "a", "b"});
  auto other = redis_.process(lock.try_lock("b"));
  ASSERT_TRUE(other);
  EXPECT_FALSE(redis_.process(set.try_lock()));
  EXPECT_EQ(exists(lock.key("a")) + exists(lock.key("c")), 0) << "nothing taken";
  ASSERT_TRUE(redis_.process(other->release()));

  auto token = redis_.process(set.try_lock());
  ASSERT_TRUE(token);
  for (const std::string& name : set.names()) {
    EXPECT_EQ(get(lock.key(name)), token->value()) << name;
    EXPECT_FALSE(redis_.process(lock.try_lock(name))) << name;
  }
  EXPECT_EQ(token->key(), set.keys().front());
  EXPECT_FALSE(token->fence());
  EXPECT_TRUE(token->fences().empty());
  EXPECT_TRUE(redis_.process(token->release()));
  for (const std::string& name : set.names())
    EXPECT_EQ(exists(lock.key(name)), 0) << name;
  EXPECT_FALSE(redis_.process(token->release())) << "released already";
}

TEST_F(LockSetTest, NamesAreTakenOnceEachInOneOrderWhateverTheirOrderGiven) {
  constexpr Lock<std::string> lock{"set-order", 10s};
  const LockSet<Lock<std::string>> forward(lock, {"a", "b", "c", "b", "a"});
  const LockSet<Lock<std::string>> backward(lock, {"c", "b", "a"});
  EXPECT_EQ(forward.names().size(), 3u);
  EXPECT_EQ(forward.names(), backward.names());
  EXPECT_EQ(forward.keys(), backward.keys());
  for (std::size_t i = 1; i < forward.keys().size(); ++i)
    EXPECT_LE(key_slot(forward.keys()[i - 1]), key_slot(forward.keys()[i]));
  const std::vector<std::string> none;
  EXPECT_THROW(LockSet<Lock<std::string>>(lock, std::span<const std::string>(none)), Error);
}

TEST_F(LockSetTest, AFencedSetGetsAFenceForEachNameLargerThanItsLastHolders) {
  constexpr auto lock = Lock<std::string>{"set-fenced", 10s}.with_fencing();
  std::map<std::string, std::uint64_t> last;
  for (const char* name : {"x", "y"}) {
    auto single = redis_.process(lock.try_lock(name));
    ASSERT_TRUE(single && single->fence());
    last[name] = *single->fence();
    ASSERT_TRUE(redis_.process(single->release()));
  }
  const LockSet<Lock<std::string>> set(lock, {"y", "x", "z"});
  auto token = redis_.process(set.try_lock());
  ASSERT_TRUE(token);
  ASSERT_EQ(token->fences().size(), 3u);
  EXPECT_EQ(token->fence(), token->fences().front());
  for (std::size_t i = 0; i < set.names().size(); ++i) {
    const std::string& name = set.names()[i];
    EXPECT_GT(token->fences()[i], last[name]) << name;
  }
  ASSERT_TRUE(redis_.process(token->release()));
  auto next = redis_.process(lock.try_lock("z"));
  ASSERT_TRUE(next && next->fence());
  const auto z = std::find(set.names().begin(), set.names().end(), "z") - set.names().begin();
  EXPECT_GT(*next->fence(), token->fences()[static_cast<std::size_t>(z)]);
  ASSERT_TRUE(redis_.process(next->release()));
}

TEST_F(LockSetTest, ExtendCoversEveryNameAndALostNameLosesTheLeaseAndGivesBackTheOthers) {
  constexpr Lock<std::string> lock{"set-extend", 2s};
  const LockSet<Lock<std::string>> set(lock, {"p", "q", "r"});
  auto token = redis_.process(set.try_lock());
  ASSERT_TRUE(token);
  server_->command({"PEXPIRE", lock.key("q"), "100"});
  ASSERT_TRUE(redis_.process(token->extend()));
  for (const std::string& name : set.names())
    EXPECT_GT(server_->command({"PTTL", lock.key(name)}).integer, 1000) << name;
  server_->command({"DEL", lock.key("q")});  // as after an expiry
  EXPECT_FALSE(redis_.process(token->extend()));
  for (const std::string& name : set.names())
    EXPECT_EQ(exists(lock.key(name)), 0) << name << ": a lost lease keeps no name";
}

TEST_F(LockSetTest, WhileHeldKeepsEveryName) {
  constexpr Lock<std::string> lock{"set-held", 300ms};
  const LockSet<Lock<std::string>> set(lock, {"m", "n"});
  auto token = redis_.process(set.try_lock());
  ASSERT_TRUE(token);
  auto held = while_held(redis_, *token, [&](std::stop_token) {
    std::this_thread::sleep_for(700ms);  // the work: longer than the TTL, so extended
    return exists(lock.key("m")) + exists(lock.key("n"));
  });
  ASSERT_TRUE(held);
  EXPECT_EQ(held.value(), 2);
  EXPECT_TRUE(redis_.process(token->release()));
}

TEST_F(LockSetTest, AGuardedWriteRefusesASetsToken) {
  constexpr Lock<std::string> lock{"set-guarded", 10s};
  const LockSet<Lock<std::string>> set(lock, {"g", "h"});
  auto token = redis_.process(set.try_lock());
  ASSERT_TRUE(token);
  EXPECT_THROW(guarded(*token), Error);
  EXPECT_TRUE(redis_.process(token->release()));
}

// The set waits in turn for the busy name alone, holding nothing meanwhile, and takes every
// name when it is released.
TEST_F(LockSetTest, AWaitHoldsNoNameWhileItWaits) {
  constexpr auto lock = Lock<std::string>{"set-wait", 10s}.with_fencing();
  const LockSet<Lock<std::string>> set(lock, {"free-1", "busy", "free-2"});
  auto holder = redis_.process(lock.try_lock("busy"));
  ASSERT_TRUE(holder);
  std::optional<LockToken<LockSet<Lock<std::string>>>> token;
  std::thread waiter([&] { token = lock_set_until(redis_, set, Clock::now() + 10s); });
  const std::string queue = detail::queue_key(lock.key("busy"));
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }, 5s));
  EXPECT_EQ(exists(lock.key("free-1")) + exists(lock.key("free-2")), 0);
  ASSERT_TRUE(redis_.process(holder->release()));
  waiter.join();
  ASSERT_TRUE(token);
  for (const std::string& name : set.names())
    EXPECT_EQ(get(lock.key(name)).substr(0, token->value().size()), token->value()) << name;
  ASSERT_EQ(token->fences().size(), 3u);
  EXPECT_TRUE(redis_.process(token->release()));
  EXPECT_EQ(server_->command({"EXISTS", queue}).integer, 0);
}

TEST_F(LockSetTest, AStoppedWaitLeavesNoKeyAndNoPlaceBehind) {
  constexpr Lock<std::string> lock{"set-stop", 10s};
  const LockSet<Lock<std::string>> set(lock, {"one", "two", "three"});
  auto holder = redis_.process(lock.try_lock("two"));
  ASSERT_TRUE(holder);
  std::stop_source stop;
  std::optional<LockToken<LockSet<Lock<std::string>>>> token;
  std::thread waiter(
      [&] { token = lock_set_until(redis_, set, Clock::now() + 10s, {}, stop.get_token()); });
  const std::string queue = detail::queue_key(lock.key("two"));
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }, 5s));
  stop.request_stop();
  waiter.join();
  EXPECT_FALSE(token);
  EXPECT_EQ(server_->command({"ZCARD", queue}).integer, 0) << "the waiter left the queue";
  EXPECT_EQ(exists(lock.key("one")) + exists(lock.key("three")), 0);
  EXPECT_EQ(get(lock.key("two")).substr(0, holder->value().size()), holder->value());
  EXPECT_TRUE(redis_.process(holder->release()));
  // A deadline that passes ends the wait the same way.
  auto again = redis_.process(lock.try_lock("two"));
  ASSERT_TRUE(again);
  EXPECT_FALSE(lock_set_for(redis_, set, 200ms));
  EXPECT_EQ(exists(lock.key("one")) + exists(lock.key("three")), 0);
  EXPECT_TRUE(redis_.process(again->release()));
}

// An RwLock's writers: a set is the writer of every name, or of none; a live reader of one name
// keeps the whole set out, and a wait takes the set once that reader is gone.
TEST_F(LockSetTest, AnRwLockWriterSetWaitsForTheReadersOfItsNames) {
  constexpr auto lock = RwLock<std::string>{"set-rw", 10s}.with_fencing();
  const LockSet set(lock, {"w2", "w1"});
  static_assert(std::is_same_v<decltype(set), const LockSet<RwLock<std::string>>>);
  auto reader = redis_.process(lock.try_read("w2"));
  ASSERT_TRUE(reader);
  EXPECT_FALSE(redis_.process(set.try_lock()));
  EXPECT_EQ(exists(lock.writer_key("w1")), 0) << "nothing taken";

  std::optional<LockToken<LockSet<RwLock<std::string>>>> token;
  std::thread waiter([&] { token = lock_set_until(redis_, set, Clock::now() + 10s); });
  const std::string queue = detail::queue_key(lock.writer_key("w2"));
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }, 5s));
  EXPECT_EQ(exists(lock.writer_key("w1")), 0) << "a waiter holds nothing";
  ASSERT_TRUE(redis_.process(reader->release()));
  waiter.join();
  ASSERT_TRUE(token);
  ASSERT_EQ(token->fences().size(), 2u);
  for (const std::string& name : set.names()) {
    EXPECT_EQ(get(lock.writer_key(name)), token->value()) << name;
    EXPECT_FALSE(redis_.process(lock.try_read(name))) << name;
    EXPECT_FALSE(redis_.process(lock.try_write(name))) << name;
  }
  ASSERT_TRUE(redis_.process(token->extend()));
  EXPECT_TRUE(redis_.process(token->release()));
  for (const std::string& name : set.names())
    EXPECT_EQ(exists(lock.writer_key(name)), 0) << name;
  auto next = redis_.process(lock.try_write("w1"));
  ASSERT_TRUE(next && next->fence());
  EXPECT_GT(*next->fence(), token->fences()[set.names()[0] == "w1" ? 0 : 1]);
  ASSERT_TRUE(redis_.process(next->release()));
}

// The async wait: a cancel ends it with operation_aborted, holding no name and no place; a wait
// left alone takes every name once the busy one is released.
TEST_F(LockSetTest, TheAsyncWaitTakesEveryNameAndACancelLeavesNothing) {
  using SetToken = LockToken<LockSet<Lock<std::string>>>;
  constexpr Lock<std::string> lock{"set-async", 10s};
  const LockSet set(lock, {"x", "y"});
  auto holder = redis_.process(lock.try_lock("y"));
  ASSERT_TRUE(holder);
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  Client client(io.get_executor(), server_->unix_url());
  const std::string queue = detail::queue_key(lock.key("y"));

  std::promise<std::pair<std::error_code, bool>> cancelled;
  asio::cancellation_signal signal;
  asio::post(io, [&] {
    async_lock_set_until(client, set, Clock::now() + 10s, {},
                         asio::bind_cancellation_slot(
                             signal.slot(), [&](std::error_code ec, std::optional<SetToken> token) {
                               cancelled.set_value({ec, token.has_value()});
                             }));
  });
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }, 5s));
  asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });
  const auto [error, got] = cancelled.get_future().get();
  EXPECT_EQ(error, asio::error::operation_aborted);
  EXPECT_FALSE(got);
  EXPECT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 0; }, 5s));
  EXPECT_EQ(exists(lock.key("x")), 0);

  std::promise<std::optional<SetToken>> taken;
  async_lock_set_until(client, set, Clock::now() + 10s,
                       [&](std::error_code ec, std::optional<SetToken> token) {
                         EXPECT_FALSE(ec) << ec.message();
                         taken.set_value(std::move(token));
                       });
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }, 5s));
  EXPECT_EQ(exists(lock.key("x")), 0) << "an async waiter holds nothing either";
  ASSERT_TRUE(redis_.process(holder->release()));
  auto token = taken.get_future().get();
  ASSERT_TRUE(token);
  EXPECT_EQ(get(lock.key("x")), token->value());
  EXPECT_EQ(get(lock.key("y")).substr(0, token->value().size()), token->value());
  EXPECT_TRUE(redis_.process(token->release()));
  client.close();
  work.reset();
  runner.join();
}

// Threads take overlapping sets of 2 to 5 of 6 names, each given in its own random order: every
// thread finishes its rounds (no deadlock), and no name is ever held by two sets at once.
TEST_F(LockSetTest, OverlappingSetsInOppositeOrdersNeverDeadlockAndNeverOverlap) {
  constexpr Lock<std::string> lock{"set-abba", 5s};
  const std::vector<std::string> all{"a", "b", "c", "d", "e", "f"};
  std::map<std::string, std::atomic<int>> holders;
  for (const std::string& name : all)
    holders[name] = 0;
  std::atomic<int> overlaps{0};
  std::atomic<int> sections{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      Client own(server_->unix_url());
      std::mt19937 random(static_cast<unsigned>(t));
      for (int round = 0; round < 30; ++round) {
        std::vector<std::string> names = all;
        std::shuffle(names.begin(), names.end(), random);
        names.resize(2 + random() % 4);
        const LockSet<Lock<std::string>> set(lock, std::span<const std::string>(names));
        auto token = lock_set_until(own, set, Clock::now() + 20s);
        ASSERT_TRUE(token) << "thread " << t << " round " << round;
        for (const std::string& name : set.names())
          if (holders.at(name).fetch_add(1) != 0)
            ++overlaps;
        std::this_thread::sleep_for(1ms);
        for (const std::string& name : set.names())
          holders.at(name).fetch_sub(1);
        ++sections;
        EXPECT_TRUE(own.process(token->release()));
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(sections.load(), 6 * 30);
  EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
}  // namespace leasehold
