// What status tools ask of a name, against a real redis-server: lease_status() of every kind (its
// holders, waiters, fencing number and permits, several kinds in one batch), the keys a kind
// keeps and which of them something else overwrote, the operator's force_release() of every
// kind, and an RwLock's release and extend by a lease's id alone.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

// Waiters that rarely try on their own: a hand-off within a second is one they were told of.
constexpr WaitOptions kSlowRecheck{.recheck = 1900ms, .ticket_ttl = 2000ms};

class StatusTest : public testing::SharedServerTest {
 protected:
  template <class Query>
  LeaseStatus status(const Query& query) {
    return redis_.process(query);
  }

  std::string name_ = "s" + std::to_string(unique_number());
  Client redis_{server_->unix_url()};
};

TEST_F(StatusTest, ALocksHolderWaiterAndFence) {
  constexpr auto locks = Lock<std::string>{"status-lock", 10s}.with_fencing();
  const LeaseStatus free = status(lease_status(locks, name_));
  EXPECT_TRUE(free.leases.empty());
  EXPECT_EQ(free.waiters, 0u);
  EXPECT_EQ(free.fence, std::nullopt) << "no fence before the first grant";
  EXPECT_EQ(free.permits, std::nullopt);

  auto token = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(token && token->fence());
  auto waiter = std::async(std::launch::async, [&] {
    return lock_until(redis_, locks, name_, Clock::now() + 10s, kSlowRecheck);
  });
  ASSERT_TRUE(eventually([&] { return status(lease_status(locks, name_)).waiters == 1; }));
  const LeaseStatus held = status(lease_status(locks, name_));
  ASSERT_EQ(held.leases.size(), 1u);
  EXPECT_EQ(held.leases[0].kind, LeaseInfo::Kind::exclusive);
  EXPECT_EQ(held.leases[0].id_prefix, token->id().hex().substr(0, 8));
  EXPECT_GT(held.leases[0].time_left, 8s);
  EXPECT_LE(held.leases[0].time_left, 10s);
  EXPECT_EQ(held.fence, token->fence());

  ASSERT_TRUE(redis_.process(token->release()));
  auto next = waiter.get();
  ASSERT_TRUE(next);
  const LeaseStatus after = status(lease_status(locks, name_));
  EXPECT_EQ(after.waiters, 0u);
  ASSERT_EQ(after.leases.size(), 1u);
  EXPECT_EQ(after.leases[0].id_prefix, next->id().hex().substr(0, 8));
  EXPECT_EQ(after.fence, next->fence());
  EXPECT_TRUE(redis_.process(next->release()));
}

TEST_F(StatusTest, AnRwLocksWriterOrReadersAndASemaphoresPermitsWithTheirCount) {
  const RwLock<std::string> rw{"status-rw", 10s};
  auto first = redis_.process(rw.try_read(name_));
  auto second = redis_.process(rw.try_read(name_));
  ASSERT_TRUE(first && second);
  const LeaseStatus shared = status(lease_status(rw, name_));
  ASSERT_EQ(shared.leases.size(), 2u);
  for (const LeaseInfo& reader : shared.leases)
    EXPECT_EQ(reader.kind, LeaseInfo::Kind::shared);
  EXPECT_EQ(shared.fence, std::nullopt) << "an unfenced lock";
  ASSERT_TRUE(redis_.process(first->release()) && redis_.process(second->release()));
  auto writer = redis_.process(rw.try_write(name_));
  ASSERT_TRUE(writer);
  const LeaseStatus exclusive = status(lease_status(rw, name_));
  ASSERT_EQ(exclusive.leases.size(), 1u);
  EXPECT_EQ(exclusive.leases[0].kind, LeaseInfo::Kind::exclusive);
  EXPECT_EQ(exclusive.leases[0].id_prefix, writer->id().hex().substr(0, 8));
  EXPECT_TRUE(redis_.process(writer->release()));

  const Semaphore<std::string> permits{"status-permits", 3, 10s};
  auto a = redis_.process(permits.try_acquire(name_));
  auto b = redis_.process(permits.try_acquire(name_));
  ASSERT_TRUE(a && b);
  const LeaseStatus two_of_three = status(lease_status(permits, name_));
  EXPECT_EQ(two_of_three.leases.size(), 2u);
  EXPECT_EQ(two_of_three.permits, 3u);
  for (const LeaseInfo& permit : two_of_three.leases)
    EXPECT_EQ(permit.kind, LeaseInfo::Kind::permit);
  EXPECT_TRUE(redis_.process(a->release()) && redis_.process(b->release()));
}

TEST_F(StatusTest, EveryKindIsReadInOneBatchInTheOrderAsked) {
  const Lock<std::string> lock{"status-batch", 10s};
  const RwLock<std::string> rw{"status-batch", 10s};
  const Semaphore<std::string> permits{"status-batch", 2, 10s};
  const RawLock raw{10s};
  const std::string raw_key = "status-raw:" + name_;
  auto held = redis_.process(lock.try_lock(name_));
  auto reader = redis_.process(rw.try_read(name_));
  ASSERT_TRUE(held && reader);
  ASSERT_EQ(server_->command({"SET", raw_key, "another-clients-value", "PX", "10000"}).str, "OK");

  const std::vector<LeaseStatusQuery<>> batch{lease_status(lock, name_), lease_status(rw, name_),
                                              lease_status(permits, name_),
                                              lease_status(raw, raw_key)};
  const std::vector<Result<LeaseStatus>> read = redis_.process(batch);
  ASSERT_EQ(read.size(), 4u);
  ASSERT_EQ(read[0].value().leases.size(), 1u);
  EXPECT_EQ(read[0].value().leases[0].kind, LeaseInfo::Kind::exclusive);
  ASSERT_EQ(read[1].value().leases.size(), 1u);
  EXPECT_EQ(read[1].value().leases[0].kind, LeaseInfo::Kind::shared);
  EXPECT_TRUE(read[2].value().leases.empty());
  ASSERT_EQ(read[3].value().leases.size(), 1u);
  EXPECT_EQ(read[3].value().leases[0].id_prefix, "another-") << "a foreign value's first 8 bytes";
  EXPECT_FALSE(read[3].value().leases[0].holder);
  EXPECT_THROW(lease_status(raw, ""), Error);
  EXPECT_TRUE(redis_.process(held->release()) && redis_.process(reader->release()));
}

TEST_F(StatusTest, AKeyOfAnotherTypeFailsTheStatusAndIsNamedByForeignKeys) {
  const Lock<std::string> lock{"status-foreign", 10s};
  const std::string queue = detail::queue_key(lock.key(name_));
  ASSERT_EQ(server_->command({"HSET", queue, "field", "value"}).integer, 1);
  const Result<LeaseStatus> read = redis_.process(std::vector{lease_status(lock, name_)}).at(0);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), errc::wrong_type);

  const std::vector<ForeignKey> found = redis_.process(foreign_keys(lease_keys(lock, name_)));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].expected.key, queue);
  EXPECT_EQ(found[0].expected.type, "zset");
  EXPECT_EQ(found[0].type, "hash");
  ASSERT_EQ(server_->command({"DEL", queue}).integer, 1);
  EXPECT_TRUE(redis_.process(foreign_keys(lease_keys(lock, name_))).empty());
}

TEST_F(StatusTest, ForceReleaseFreesALockAndTellsItsWaiterAtOnce) {
  // The waiter's next try of its own is 5 s after its first: getting in sooner, it was told.
  constexpr WaitOptions kRareRecheck{.recheck = 5s, .ticket_ttl = 6s};
  const Lock<std::string> locks{"status-force", 30s};
  auto token = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  auto waiter = std::async(std::launch::async, [&] {
    return lock_until(redis_, locks, name_, Clock::now() + 10s, kRareRecheck);
  });
  ASSERT_TRUE(eventually([&] { return status(lease_status(locks, name_)).waiters == 1; }));
  const auto forced = Clock::now();
  EXPECT_EQ(redis_.process(locks.force_release(name_)), 1);
  auto got = waiter.get();
  ASSERT_TRUE(got) << "the waiter got in";
  EXPECT_LT(Clock::now() - forced, 2500ms) << "told of the release, not at its recheck";
  EXPECT_FALSE(redis_.process(token->release())) << "the forced-out holder holds nothing";
  EXPECT_TRUE(redis_.process(got->release()));
  EXPECT_EQ(redis_.process(locks.force_release(name_)), 0) << "nothing left to free";
}

TEST_F(StatusTest, ForceReleaseFreesEveryPermitOfASemaphore) {
  const Semaphore<std::string> permits{"status-force", 2, 30s};
  auto a = redis_.process(permits.try_acquire(name_));
  auto b = redis_.process(permits.try_acquire(name_));
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(redis_.process(permits.try_acquire(name_))) << "both permits held";
  EXPECT_EQ(redis_.process(permits.force_release(name_)), 2) << "the holders' set and the count";
  EXPECT_TRUE(status(lease_status(permits, name_)).leases.empty());
  auto c = redis_.process(permits.try_acquire(name_));
  EXPECT_TRUE(c);
  EXPECT_FALSE(redis_.process(a->release()));
  EXPECT_TRUE(redis_.process(c->release()));
}

TEST_F(StatusTest, AnRwLocksWriterIsExtendedAndReleasedByItsIdAlone) {
  const RwLock<std::string> rw{"status-id", 2s};
  auto writer = redis_.process(rw.try_write(name_));
  ASSERT_TRUE(writer);
  const RwLock<std::string> longer{"status-id", 20s};
  EXPECT_TRUE(redis_.process(longer.extend_by_id(name_, writer->id())));
  EXPECT_GT(server_->command({"PTTL", rw.writer_key(name_)}).integer, 10000) << "for the new TTL";
  EXPECT_FALSE(redis_.process(rw.release_by_id(name_, LeaseId::generate())))
      << "another id holds nothing";
  EXPECT_TRUE(redis_.process(rw.release_by_id(name_, writer->id())));
  EXPECT_FALSE(server_->command({"EXISTS", rw.writer_key(name_)}).integer);
  EXPECT_FALSE(redis_.process(rw.release_by_id(name_, writer->id()))) << "released once";
  EXPECT_FALSE(redis_.process(rw.extend_by_id(name_, writer->id()))) << "never resurrected";
}

TEST_F(StatusTest, AReaderIsExtendedAndReleasedByItsIdAloneAndTheOthersStay) {
  const RwLock<std::string> rw{"status-id", 2s};
  auto first = redis_.process(rw.try_read(name_));
  auto second = redis_.process(rw.try_read(name_));
  ASSERT_TRUE(first && second);
  const RwLock<std::string> longer{"status-id", 20s};
  EXPECT_TRUE(redis_.process(longer.extend_by_id(name_, second->id())));
  const auto time_left = [&](const LeaseId& id) {
    for (const LeaseInfo& lease : status(lease_status(rw, name_)).leases)
      if (lease.id_prefix == id.hex().substr(0, 8))
        return lease.time_left;
    return std::chrono::milliseconds(-1);
  };
  EXPECT_GT(time_left(second->id()), 10s);
  EXPECT_LE(time_left(first->id()), 2s) << "the other reader's lease is untouched";
  EXPECT_TRUE(redis_.process(rw.release_by_id(name_, first->id())));
  EXPECT_EQ(time_left(first->id()), std::chrono::milliseconds(-1)) << "gone";
  EXPECT_GT(time_left(second->id()), 10s) << "still held";
  EXPECT_TRUE(redis_.process(second->release()));
}

}  // namespace
}  // namespace leasehold
