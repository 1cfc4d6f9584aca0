// Guarded writes against a real redis-server: commands run only while the token's lease is held
// — a Lock's (marked by its queue too), an RwLock writer's or reader's, a Semaphore permit's, an
// Election leader's — and not at all once it was released, ran out, was forced out or taken by
// another; a command's error names it and leaves those before it done.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class GuardedTest : public testing::SharedServerTest {
 protected:
  void SetUp() override {
    const std::string number = std::to_string(unique_number());
    name_ = "n" + number;
    data_ = "data:" + number;
    counter_ = "count:" + number;
  }
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }

  Client redis_{server_->unix_url()};
  std::string name_;
  std::string data_;
  std::string counter_;
};

TEST_F(GuardedTest, CommandsRunWhileTheLockIsHeldAndGiveTheirRepliesInOrder) {
  constexpr Lock<std::string> locks{"guarded", 10s};
  auto token = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  auto write = guarded(*token);
  write.call({"SET", data_, "final"}).call({"INCR", counter_}).call({"GET", data_ + ":none"});
  EXPECT_EQ(write.size(), 3u);
  const auto replies = redis_.process(write);
  ASSERT_TRUE(replies) << "the lease is held";
  ASSERT_EQ(replies->size(), 3u);
  EXPECT_EQ((*replies)[0].str, "OK");
  EXPECT_EQ((*replies)[1].integer, 1);
  EXPECT_TRUE((*replies)[2].is_nil());
  EXPECT_EQ(get(data_), "final");
}

TEST_F(GuardedTest, NothingRunsOnceTheLeaseWasReleasedRanOutForcedOutOrTakenByAnother) {
  constexpr Lock<std::string> locks{"guarded", 10s};
  {
    auto token = redis_.process(locks.try_lock(name_));
    ASSERT_TRUE(redis_.process(token->release()));
    EXPECT_FALSE(redis_.process(guarded(*token).call({"SET", data_, "late"}))) << "released";
  }
  {
    auto token = redis_.process(locks.try_lock(name_));
    EXPECT_EQ(redis_.process(locks.force_release(name_)), 1);
    EXPECT_FALSE(redis_.process(guarded(*token).call({"SET", data_, "late"}))) << "forced out";
  }
  {
    constexpr Lock<std::string> short_locks{"guarded", 50ms};
    auto stale = redis_.process(short_locks.try_lock(name_));
    ASSERT_TRUE(eventually([&] { return !exists(short_locks.key(name_)); }, 2s));
    EXPECT_FALSE(redis_.process(guarded(*stale).call({"SET", data_, "late"}))) << "ran out";
    auto next = redis_.process(locks.try_lock(name_));
    ASSERT_TRUE(next);
    EXPECT_FALSE(redis_.process(guarded(*stale).call({"SET", data_, "stale"})))
        << "another holds it";
    EXPECT_TRUE(redis_.process(guarded(*next).call({"SET", data_, "current"})));
  }
  EXPECT_EQ(get(data_), "current") << "only the holder's write ran";
}

// A waiter in turn marks the lock's key with its place; the holder's guarded writes still run.
TEST_F(GuardedTest, ALockMarkedByItsQueueIsStillHeldByItsHolder) {
  constexpr Lock<std::string> locks{"guarded", 10s};
  auto token = redis_.process(locks.try_lock(name_));
  Client waiter_client(server_->unix_url());
  auto waiter = std::async(std::launch::async, [&] {
    return lock_until(waiter_client, locks, name_, Clock::now() + 10s);
  });
  ASSERT_TRUE(eventually([&] { return get(locks.key(name_)) != token->value(); }))
      << "the head waiter marked the key";
  EXPECT_TRUE(redis_.process(guarded(*token).call({"SET", data_, "marked"})));
  ASSERT_TRUE(redis_.process(token->release()));
  auto next = waiter.get();
  ASSERT_TRUE(next);
  EXPECT_TRUE(waiter_client.process(guarded(*next).call({"SET", data_, "next"})));
  EXPECT_EQ(get(data_), "next");
}

TEST_F(GuardedTest, AnErrorNamesTheCommandAndLeavesTheOnesBeforeItDone) {
  constexpr Lock<std::string> locks{"guarded", 10s};
  auto token = redis_.process(locks.try_lock(name_));
  server_->command({"HSET", data_, "field", "value"});
  auto write = guarded(*token);
  write.call({"INCR", counter_}).call({"INCR", data_}).call({"INCR", counter_});
  try {
    redis_.process(write);
    FAIL() << "INCR of a hash succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::wrong_type);
    EXPECT_NE(std::string(e.what()).find("guarded command 2, INCR"), std::string::npos) << e.what();
  }
  EXPECT_EQ(get(counter_), "1") << "the first command ran, the third did not";
}

TEST_F(GuardedTest, CommandsWithSeveralKeysOrNoneAreDeclaredWithTheirKeys) {
  constexpr Lock<std::string> locks{"guarded", 10s};
  auto token = redis_.process(locks.try_lock(name_));
  auto write = guarded(*token);
  write.call_touching({data_, counter_}, {"MSET", data_, "a", counter_, "7"})
      .call_touching({}, {"PING"})
      .call(std::vector<std::string>{"INCR", counter_});
  const auto replies = redis_.process(write);
  ASSERT_TRUE(replies);
  EXPECT_EQ((*replies)[1].str, "PONG");
  EXPECT_EQ((*replies)[2].integer, 8);
  EXPECT_THROW(guarded(*token).call({"PING"}), Error) << "no key: call_touching()";
  EXPECT_THROW(guarded(*token).call_touching({}, {}), Error) << "no command";
}

TEST_F(GuardedTest, EveryKindsTokenGuards) {
  constexpr RwLock<std::string> catalog{"guarded", 10s};
  constexpr Semaphore<std::string> exports{"guarded", 2, 10s};
  constexpr Election<std::string> elections{"guarded", 10s};
  auto writer = redis_.process(catalog.try_write(name_));
  ASSERT_TRUE(writer);
  EXPECT_TRUE(redis_.process(guarded(*writer).call({"SET", data_, "w"}))) << "writer";
  ASSERT_TRUE(redis_.process(writer->release()));
  EXPECT_FALSE(redis_.process(guarded(*writer).call({"SET", data_, "w"}))) << "writer released";

  auto reader = redis_.process(catalog.try_read(name_));
  auto other_reader = redis_.process(catalog.try_read(name_));
  ASSERT_TRUE(reader && other_reader);
  EXPECT_TRUE(redis_.process(guarded(*reader).call({"SET", data_, "r"}))) << "reader";
  ASSERT_TRUE(redis_.process(reader->release()));
  EXPECT_FALSE(redis_.process(guarded(*reader).call({"SET", data_, "r"})))
      << "reader released, another still reads";
  EXPECT_TRUE(redis_.process(guarded(*other_reader).call({"SET", data_, "r2"})));

  auto permit = redis_.process(exports.try_acquire(name_));
  ASSERT_TRUE(permit);
  EXPECT_TRUE(redis_.process(guarded(*permit).call({"SET", data_, "p"}))) << "permit";
  EXPECT_EQ(redis_.process(exports.force_release(name_)), 2) << "the holders' set and the count";
  EXPECT_FALSE(redis_.process(guarded(*permit).call({"SET", data_, "p"}))) << "permit forced";

  auto leader = wait_for(redis_, elections.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  EXPECT_TRUE(redis_.process(guarded(*leader).call({"SET", data_, "l"}))) << "leader";
  ASSERT_TRUE(redis_.process(elections.resign(*leader)));
  EXPECT_FALSE(redis_.process(guarded(*leader).call({"SET", data_, "l"}))) << "resigned";
  EXPECT_EQ(get(data_), "l");
}

// A reader's lease ends at its score, not when a later script prunes it.
TEST_F(GuardedTest, AReaderWhoseLeaseRanOutNoLongerGuards) {
  constexpr RwLock<std::string> catalog{"guarded", 50ms};
  constexpr RwLock<std::string> long_catalog{"guarded", 10s};
  auto stale = redis_.process(catalog.try_read(name_));
  auto reading = redis_.process(long_catalog.try_read(name_));  // keeps the set alive
  ASSERT_TRUE(stale && reading);
  ASSERT_TRUE(eventually(
      [&] {
        return !redis_.process(guarded(*stale).call({"SET", data_, "stale"}));
      },
      2s));
  EXPECT_TRUE(redis_.process(guarded(*reading).call({"SET", data_, "fresh"})));
  EXPECT_EQ(get(data_), "fresh");
}

TEST_F(GuardedTest, AHashTagPutsKeysInTheLeasesSlot) {
  const Lock<std::string> plain{"guarded", 10s};
  const Lock<std::string> fenced = plain.with_fencing();
  constexpr RwLock<std::string> catalog{"guarded", 10s};
  constexpr Semaphore<std::string> exports{"guarded", 2, 10s};
  constexpr Election<std::string> elections{"guarded", 10s};
  for (const std::string name : {"plain", "with{braces}", "{", "", "ünï"}) {
    EXPECT_EQ(key_slot("x:" + plain.hash_tag(name) + ":y"), key_slot(plain.key(name))) << name;
    EXPECT_EQ(key_slot(fenced.hash_tag(name) + "z"), key_slot(fenced.key(name))) << name;
    EXPECT_EQ(key_slot(catalog.hash_tag(name)), key_slot(catalog.readers_key(name))) << name;
    EXPECT_EQ(key_slot(exports.hash_tag(name)), key_slot(exports.holders_key(name))) << name;
    EXPECT_EQ(key_slot(elections.hash_tag(name)), key_slot(elections.key(name))) << name;
  }
  EXPECT_EQ(fenced.hash_tag("invoice-7"), "{guarded:invoice-7}");
}

}  // namespace
}  // namespace leasehold
