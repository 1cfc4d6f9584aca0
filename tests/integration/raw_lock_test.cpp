// Raw keys and adopted leases against a real redis-server: a RawLock and a raw Locker use the key
// they are given with a bare random value, wait by polling without ever rewriting another
// client's value, and a token adopted from a lease's value extends and releases that lease only.
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

bool is_bare_id(const std::string& value) {
  if (value.size() != 32)
    return false;
  for (char c : value)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

class RawLockTest : public testing::SharedServerTest {
 protected:
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }
  // Another client's lock, as redis-py's Lock and node-redlock take one.
  void foreign_lock(const std::string& key, const std::string& value, const std::string& ttl_ms) {
    ASSERT_EQ(server_->command({"SET", key, value, "NX", "PX", ttl_ms}).str, "OK");
  }

  std::string key_ = "invoice:" + std::to_string(unique_number());
  Client redis_{server_->unix_url()};
};

TEST_F(RawLockTest, TakesExactlyTheKeyWithABareIdAndReleasesIt) {
  const RawLock locks{10s};
  auto token = redis_.process(locks.try_lock(key_));
  ASSERT_TRUE(token);
  EXPECT_EQ(token->key(), key_);
  EXPECT_EQ(get(key_), token->id().hex()) << "no holder identity on a raw key";
  EXPECT_TRUE(is_bare_id(token->value()));
  const long long ttl = server_->command({"PTTL", key_}).integer;
  EXPECT_GT(ttl, 9000);
  EXPECT_LE(ttl, 10000);
  EXPECT_FALSE(redis_.process(locks.try_lock(key_))) << "held";
  EXPECT_TRUE(redis_.process(token->extend()));
  EXPECT_TRUE(redis_.process(token->release()));
  EXPECT_FALSE(exists(key_));
  EXPECT_FALSE(redis_.process(token->release())) << "released once";
}

TEST_F(RawLockTest, AnotherClientsLockIsNeitherTakenNorReleasedNorExtended) {
  const std::string theirs = "0123456789abcdef0123456789abcdef";
  foreign_lock(key_, theirs, "10000");
  const RawLock locks{5s};
  EXPECT_FALSE(redis_.process(locks.try_lock(key_)));
  const auto stranger = locks.adopt(key_, "fedcba9876543210fedcba9876543210");
  EXPECT_FALSE(redis_.process(stranger.release()));
  EXPECT_FALSE(redis_.process(stranger.extend()));
  EXPECT_EQ(get(key_), theirs);
  EXPECT_GT(server_->command({"PTTL", key_}).integer, 9000) << "its TTL untouched";
}

TEST_F(RawLockTest, AWaiterPollsWithoutMarkingTheKeyAndGetsItOnceReleased) {
  const std::string theirs = "00112233445566778899aabbccddeeff";
  foreign_lock(key_, theirs, "30000");
  const RawLock locks{5s};
  auto waiting = std::async(std::launch::async, [&] {
    return lock_for(redis_, locks, key_, 20s, WaitOptions{.poll = 20ms});
  });
  // The waiter tries every 20 ms meanwhile; the foreign value stays exactly as it was written.
  const auto watch_until = Clock::now() + 300ms;
  while (Clock::now() < watch_until)
    ASSERT_EQ(get(key_), theirs) << "a raw waiter never rewrites another client's key";
  EXPECT_EQ(server_->command({"KEYS", key_ + "*"}).elements.size(), 1u) << "no queue keys";
  server_->command({"DEL", key_});
  const Clock::time_point released = Clock::now();
  auto token = waiting.get();
  ASSERT_TRUE(token);
  EXPECT_LT(Clock::now() - released, 2s);
  EXPECT_EQ(get(key_), token->value());
  EXPECT_EQ(server_->command({"KEYS", key_ + "*"}).elements.size(), 1u);
}

TEST_F(RawLockTest, AWaiterGivesUpAtItsDeadline) {
  foreign_lock(key_, "00112233445566778899aabbccddeeff", "30000");
  const RawLock locks{5s};
  const Clock::time_point started = Clock::now();
  EXPECT_FALSE(lock_for(redis_, locks, key_, 200ms, WaitOptions{.poll = 30ms}));
  EXPECT_GE(Clock::now() - started, 200ms);
  EXPECT_THROW(lock_for(redis_, locks, key_, 1s, WaitOptions{.poll = 0ms}), Error);
}

TEST_F(RawLockTest, ARawLockerUsesTheNameAsTheKeyAndPollsEachRetryDelay) {
  Locker locker(redis_, raw_keys);
  EXPECT_TRUE(locker.raw_keys());
  EXPECT_EQ(locker.key(key_), key_);
  const int seen = locker.with_lock(key_, [&] {
    EXPECT_TRUE(is_bare_id(get(key_)));
    return 7;
  });
  EXPECT_EQ(seen, 7);
  EXPECT_FALSE(exists(key_));

  const std::string theirs = "ffeeddccbbaa99887766554433221100";
  foreign_lock(key_, theirs, "30000");
  EXPECT_THROW(locker.with_lock(key_, [] {}, {.retry_attempts = 0}), AcquireError);
  auto waited = std::async(std::launch::async, [&] {
    return locker.with_lock(key_, [&] { return get(key_); },
                            {.ttl = 5s, .retry_attempts = 200, .retry_delay = 25ms});
  });
  const auto watch_until = Clock::now() + 200ms;
  while (Clock::now() < watch_until)
    ASSERT_EQ(get(key_), theirs);
  server_->command({"DEL", key_});
  const std::string held = waited.get();
  EXPECT_TRUE(is_bare_id(held));
  EXPECT_NE(held, theirs);
  EXPECT_FALSE(exists(key_)) << "released after the callback";

  Mutex mutex(locker, key_, {.ttl = 5s});
  mutex.lock();
  EXPECT_GT(server_->command({"PTTL", key_}).integer, 0);
  EXPECT_FALSE(redis_.process(RawLock{5s}.try_lock(key_)));
  mutex.unlock();
  EXPECT_FALSE(exists(key_));
}

TEST_F(RawLockTest, AnAdoptedLockTokenExtendsAndReleasesTheLeaseOnly) {
  const Lock<std::string> locks{"adopt", 10s};
  auto token = redis_.process(locks.try_lock(key_));
  ASSERT_TRUE(token);
  const std::string value = token->value();
  EXPECT_EQ(value.substr(0, 32), token->id().hex());
  // Another process, or a later step of a script, knows only the value.
  const Lock<std::string> later{"adopt", 20s};
  auto adopted = later.adopt(key_, value);
  EXPECT_EQ(adopted.id(), token->id());
  EXPECT_TRUE(adopted.expired()) << "nobody knows how long it has left until an extend";
  EXPECT_TRUE(redis_.process(adopted.extend()));
  EXPECT_FALSE(adopted.expired());
  EXPECT_GT(server_->command({"PTTL", token->key()}).integer, 19000) << "the adopter's TTL";
  EXPECT_TRUE(redis_.process(adopted.release()));
  EXPECT_FALSE(redis_.process(token->release())) << "already released by the adopted token";
  EXPECT_FALSE(redis_.process(adopted.extend())) << "an ended lease stays ended";
}

TEST_F(RawLockTest, AdoptedRwLockTokensKnowTheirSide) {
  const RwLock<std::string> locks{"adopt", 10s};
  auto reader = redis_.process(locks.try_read(key_));
  ASSERT_TRUE(reader);
  auto as_writer = locks.adopt_write(key_, reader->value());
  EXPECT_FALSE(redis_.process(as_writer.release())) << "a reader's value holds no writer lease";
  auto as_reader = locks.adopt_read(key_, reader->value());
  EXPECT_TRUE(redis_.process(as_reader.extend()));
  EXPECT_TRUE(redis_.process(as_reader.release()));
  auto writer = redis_.process(locks.try_write(key_));
  ASSERT_TRUE(writer);
  EXPECT_FALSE(redis_.process(locks.adopt_read(key_, writer->value()).release()));
  EXPECT_TRUE(redis_.process(locks.adopt_write(key_, writer->value()).release()));
  EXPECT_TRUE(redis_.process(locks.try_read(key_))) << "free again";
}

TEST_F(RawLockTest, AdoptRefusesWhatIsNotALeaseValue) {
  const Lock<std::string> locks{"adopt", 10s};
  for (const std::string bad :
       {"", "abc", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef0",
        "0123456789abcdef0123456789abcdef;h;1;x;1:marked",
        "0123456789abcdef0123456789abcdef;a b"}) {
    try {
      (void)locks.adopt(key_, bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument));
      EXPECT_NE(std::string(e.what()).find("not a lease token"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW((void)locks.adopt(key_, "0123456789ABCDEF0123456789abcdef;host;1;label;1"));
  EXPECT_THROW((void)RawLock{1s}.try_lock(""), Error);
}

}  // namespace
}  // namespace leasehold
