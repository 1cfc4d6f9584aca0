// Fencing numbers: an opt-in counter of the name's hash slot advanced by each grant to at least
// the server's clock in microseconds, never expiring, strictly increasing in grant order.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <set>
#include <thread>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "rethrow.hpp"
#include "server_clock.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::server_clock_us;

class FencingTest : public testing::SharedServerTest {
 protected:
  FencingTest() : redis_(server_->unix_url()) {}
  Client redis_;
};

TEST_F(FencingTest, AnUnfencedLockHasNoFence) {
  const Lock<std::string> lock{"fence-none", 10s};
  auto token = redis_.process(lock.try_lock("a"));
  ASSERT_TRUE(token);
  EXPECT_FALSE(token->fence());
  EXPECT_TRUE(redis_.process(token->release()));
}

TEST_F(FencingTest, EachGrantOfANameGetsALargerFence) {
  constexpr auto lock = Lock<std::string>{"fence-grow", 10s, "fence-grow"}.with_fencing();
  static_assert(lock.fencing());
  std::uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    const std::uint64_t clock = server_clock_us(*server_);
    auto token = redis_.process(lock.try_lock("invoice-1"));
    ASSERT_TRUE(token);
    ASSERT_TRUE(token->fence());
    EXPECT_GT(*token->fence(), last);
    EXPECT_GE(*token->fence(), clock) << "no fence is below the clock of its grant";
    last = *token->fence();
    // While held: a contender gets nothing, and the counter does not move.
    EXPECT_FALSE(redis_.process(lock.try_lock("invoice-1")));
    EXPECT_TRUE(redis_.process(token->extend()));
    EXPECT_TRUE(redis_.process(token->release()));
  }
  // A single server counts every fenced name of the prefix on its one counter, which never
  // expires. Set ahead of the clock (by 1000 s), it gives any name the next number.
  const std::string counter = lock.server_fence_counter_key();
  EXPECT_EQ(server_->command({"GET", counter}).str, std::to_string(last));
  EXPECT_EQ(server_->command({"PTTL", counter}).integer, -1);
  std::uint64_t ahead = server_clock_us(*server_) + 1'000'000'000;
  server_->command({"SET", counter, std::to_string(ahead)});
  for (const std::string name : {"invoice-2", "other", "invoice-1"}) {
    auto other = redis_.process(lock.try_lock(name));
    ASSERT_TRUE(other && other->fence()) << name;
    EXPECT_EQ(*other->fence(), ++ahead) << name;
  }
  // The counter of the name's slot, which a Redis Cluster counts on, is not made here.
  EXPECT_EQ(key_slot(lock.key("invoice-1")), key_slot(lock.fence_counter_key("invoice-1")));
  EXPECT_EQ(server_->command({"EXISTS", lock.fence_counter_key("invoice-1")}).integer, 0);
}

TEST_F(FencingTest, ATakeoverAfterExpiryGetsALargerFenceAndTheStaleHolderIsFencedOff) {
  constexpr auto lock = Lock<std::string>{"fence-takeover", 200ms}.with_fencing();
  auto stale = redis_.process(lock.try_lock("report"));
  ASSERT_TRUE(stale);
  ASSERT_TRUE(eventually([&] { return stale->expired(); }, 2s));
  std::optional<LockToken<Lock<std::string>>> fresh;
  ASSERT_TRUE(eventually(
      [&] { return (fresh = redis_.process(lock.try_lock("report"))).has_value(); }, 2s));
  EXPECT_GT(*fresh->fence(), *stale->fence());
  // A resource that keeps the largest fence it accepted refuses the stale holder.
  std::uint64_t accepted = *fresh->fence();
  auto write = [&](std::uint64_t fence) {
    if (fence < accepted)
      return false;
    accepted = fence;
    return true;
  };
  EXPECT_TRUE(write(*fresh->fence()));
  EXPECT_FALSE(write(*stale->fence()));
  EXPECT_FALSE(redis_.process(stale->release()));
  EXPECT_TRUE(redis_.process(fresh->release()));
}

TEST_F(FencingTest, ARetriedAcquireGetsTheSameFence) {
  constexpr auto lock = Lock<std::string>{"fence-retry", 10s}.with_fencing();
  const auto query = lock.try_lock("job");
  auto first = redis_.process(query);
  auto again = redis_.process(query);  // the same id: as after a lost reply
  ASSERT_TRUE(first && again);
  EXPECT_EQ(*first->fence(), *again->fence());
  EXPECT_EQ(server_->command({"GET", lock.server_fence_counter_key()}).str,
            std::to_string(*first->fence()));
  EXPECT_TRUE(redis_.process(first->release()));
}

TEST_F(FencingTest, FencesAreUniqueAndIncreasingUnderContention) {
  constexpr auto lock = Lock<std::uint64_t>{"fence-race", 10s}.with_fencing();
  std::mutex mutex;
  std::vector<std::uint64_t> fences;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Client own(server_->unix_url());
      for (int granted = 0; granted < 50;) {
        if (auto token = own.process(lock.try_lock(7))) {
          {
            std::lock_guard guard(mutex);
            // Granted in order: each new grant's fence is larger than every earlier one.
            for (std::uint64_t earlier : fences)
              EXPECT_LT(earlier, *token->fence());
            fences.push_back(*token->fence());
          }
          EXPECT_TRUE(own.process(token->release()));
          ++granted;
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(std::set<std::uint64_t>(fences.begin(), fences.end()).size(), 200u);
}

TEST_F(FencingTest, AnRwLockWriterGetsAFenceReadersDoNot) {
  constexpr auto lock = RwLock<std::string>{"fence-rw", 10s}.with_fencing();
  auto writer = redis_.process(lock.try_write("catalog"));
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->fence());
  const std::uint64_t first = *writer->fence();
  EXPECT_EQ(redis_.process(lock.try_write("catalog")), std::nullopt);
  EXPECT_TRUE(redis_.process(writer->release()));
  auto reader = redis_.process(lock.try_read("catalog"));
  ASSERT_TRUE(reader);
  EXPECT_FALSE(reader->fence());
  EXPECT_TRUE(redis_.process(reader->release()));
  auto second = redis_.process(lock.try_write("catalog"));
  ASSERT_TRUE(second);
  EXPECT_GT(*second->fence(), first);
  EXPECT_EQ(key_slot(lock.fence_counter_key("catalog")), key_slot(lock.writer_key("catalog")));
  // An unfenced RwLock's writer has none.
  const RwLock<std::string> plain{"fence-rw-plain", 10s};
  auto unfenced = redis_.process(plain.try_write("catalog"));
  ASSERT_TRUE(unfenced);
  EXPECT_FALSE(unfenced->fence());
  EXPECT_TRUE(redis_.process(unfenced->release()));
  EXPECT_TRUE(redis_.process(second->release()));
}

TEST_F(FencingTest, FencedLockAndRwLockWritersThatWaitInTurnGetLargerFences) {
  constexpr auto lock = Lock<std::string>{"fence-wait", 10s}.with_fencing();
  constexpr auto rw = RwLock<std::string>{"fence-wait-rw", 10s}.with_fencing();
  const auto deadline = [] { return Clock::now() + 5s; };
  auto first = lock_until(redis_, lock, std::string("queue"), deadline());
  ASSERT_TRUE(first && first->fence());
  ASSERT_TRUE(redis_.process(first->release()));
  auto second = lock_until(redis_, lock, std::string("queue"), deadline());
  ASSERT_TRUE(second && second->fence());
  EXPECT_GT(*second->fence(), *first->fence());
  EXPECT_TRUE(redis_.process(second->release()));

  auto writer = write_until(redis_, rw, std::string("queue"), deadline());
  ASSERT_TRUE(writer && writer->fence());
  ASSERT_TRUE(redis_.process(writer->release()));
  auto next_writer = write_until(redis_, rw, std::string("queue"), deadline());
  ASSERT_TRUE(next_writer && next_writer->fence());
  EXPECT_GT(*next_writer->fence(), *writer->fence());
  EXPECT_EQ(server_->command({"GET", rw.server_fence_counter_key()}).str,
            std::to_string(*next_writer->fence()));
  EXPECT_TRUE(redis_.process(next_writer->release()));
}

TEST_F(FencingTest, WhileHeldKeepsTheFence) {
  constexpr auto lock = Lock<std::string>{"fence-held", 300ms}.with_fencing();
  auto token = redis_.process(lock.try_lock("long"));
  ASSERT_TRUE(token);
  const auto fence = token->fence();
  auto held = while_held(redis_, *token, [&](std::stop_token) {
    std::this_thread::sleep_for(700ms);  // the work: longer than the TTL, so extended
    return token->fence();
  });
  ASSERT_TRUE(held);
  EXPECT_EQ(held.value(), fence);
  EXPECT_EQ(server_->command({"GET", lock.server_fence_counter_key()}).str, std::to_string(*fence));
  EXPECT_TRUE(redis_.process(token->release()));
}

TEST_F(FencingTest, ACounterOfTheWrongTypeIsAClearError) {
  // A prefix of its own: the counter is every fenced name's of the prefix.
  constexpr auto lock = Lock<std::string>{"fence-type", 10s, "fence-type"}.with_fencing();
  server_->command({"HSET", lock.server_fence_counter_key(), "f", "v"});
  try {
    redis_.process(lock.try_lock("x"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::wrong_type);
  }
}

TEST_F(FencingTest, AFencingLockerGivesWithLockAndMutexFencesThatGrow) {
  Locker locker(redis_, "fenced-locker", Fencing::on);
  EXPECT_TRUE(locker.fencing());
  EXPECT_EQ(locker.key("invoice:{7}"), "fenced-locker:{invoice:%7B7%7D}");
  EXPECT_EQ(key_slot(locker.key("invoice:{7}")), key_slot(locker.fence_counter_key("invoice:{7}")));
  std::vector<std::uint64_t> fences;
  for (int i = 0; i < 3; ++i) {
    locker.with_lock("invoice:{7}", [&] {
      const auto fence = locker.fence("invoice:{7}");
      ASSERT_TRUE(fence);
      fences.push_back(*fence);
      // Reentrant calls see the same lease and fence.
      locker.with_lock("invoice:{7}", [&] { EXPECT_EQ(locker.fence("invoice:{7}"), fence); });
      EXPECT_FALSE(locker.fence("invoice:8"));  // not held by this thread
    });
  }
  ASSERT_EQ(fences.size(), 3u);
  EXPECT_TRUE(fences[0] < fences[1] && fences[1] < fences[2]) << fences[0] << " " << fences[1];
  EXPECT_FALSE(locker.fence("invoice:{7}"));  // outside the callback
  // A Mutex on the same name shares the counter and excludes with_lock.
  Mutex mutex(locker, "invoice:{7}");
  EXPECT_FALSE(mutex.fence());
  mutex.lock();
  ASSERT_TRUE(mutex.fence());
  EXPECT_GT(*mutex.fence(), fences[2]);
  EXPECT_THROW(locker.with_lock("invoice:{7}", [] {}, {.ttl = 1s, .retry_attempts = 0}),
               AcquireError);
  mutex.unlock();
  // An unfenced locker has none.
  Locker plain(redis_, "plain-locker");
  plain.with_lock("x", [&] { EXPECT_FALSE(plain.fence("x")); });
}

TEST_F(FencingTest, AsyncWithLockGivesTheFenceThroughItsContext) {
  Locker locker(redis_, "fenced-async", Fencing::on);
  const std::uint64_t clock = server_clock_us(*server_);
  asio::io_context io;
  std::optional<std::uint64_t> seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await locker.async_with_lock("report",
                                        [&](LockContext context) -> asio::awaitable<void> {
                                          seen = context.fence(locker, "report");
                                          co_return;
                                        });
      },
      testing::rethrow_failure);
  io.run();
  ASSERT_TRUE(seen);
  EXPECT_GE(*seen, clock);
  EXPECT_EQ(server_->command({"GET", locker.server_fence_counter_key()}).str,
            std::to_string(*seen));
}

}  // namespace
}  // namespace leasehold
