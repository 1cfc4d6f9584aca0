// Holder identity against a real redis-server: every kind of lease carries its holder's host,
// pid, label and start, describe() reads them back, and they go with the lease (released,
// expired); two labels stand for two hosts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <set>
#include <string>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class HolderTest : public testing::SharedServerTest {
 protected:
  void SetUp() override { set_holder_label("holder-test"); }
  void TearDown() override { set_holder_label(program_invocation_short_name); }

  // The one holder describe() finds on `query`'s name, checked to be this process.
  template <class Query>
  std::vector<LeaseInfo> described(const Query& query) {
    return redis_.process(query);
  }
  static void expect_this_process(const LeaseInfo& lease, const std::string& label) {
    ASSERT_TRUE(lease.holder);
    EXPECT_EQ(lease.holder->pid, ::getpid());
    EXPECT_FALSE(lease.holder->host.empty());
    EXPECT_EQ(lease.holder->label, label);
    const auto age = std::chrono::system_clock::now() - lease.holder->taken_at;
    EXPECT_GE(age, -1s) << "taken by this host's clock";
    EXPECT_LT(age, 10s);
  }

  std::string name_ = "h" + std::to_string(unique_number());
  Client redis_{server_->unix_url()};
};

TEST_F(HolderTest, ALockCarriesItsHolderUntilReleasedOrExpired) {
  const Lock<std::string> locks{"holder", 10s};
  EXPECT_TRUE(described(describe(locks, name_)).empty()) << "free";
  auto token = redis_.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  const auto held = described(describe(locks, name_));
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].kind, LeaseInfo::Kind::exclusive);
  EXPECT_EQ(held[0].id_prefix, token->id().hex().substr(0, 8));
  EXPECT_GT(held[0].time_left, 9s);
  expect_this_process(held[0], "holder-test");
  EXPECT_TRUE(redis_.process(token->extend())) << "an extension keeps the value";
  EXPECT_TRUE(redis_.process(token->release()));
  EXPECT_TRUE(described(describe(locks, name_)).empty());
  EXPECT_EQ(server_->command({"KEYS", "leasehold:Lock:holder:" + name_ + "*"}).elements.size(), 0u)
      << "nothing left behind";

  const Lock<std::string> short_locks{"holder", 100ms};
  ASSERT_TRUE(redis_.process(short_locks.try_lock(name_)));
  EXPECT_TRUE(eventually([&] { return described(describe(short_locks, name_)).empty(); }, 3s))
      << "gone with the lease's expiry";
}

TEST_F(HolderTest, RwLockWriterReadersAndPermitsCarryTheirHolders) {
  const RwLock<std::string> catalog{"holder-rw", 10s};
  auto writer = redis_.process(catalog.try_write(name_));
  ASSERT_TRUE(writer);
  auto with_writer = described(describe(catalog, name_));
  ASSERT_EQ(with_writer.size(), 1u);
  EXPECT_EQ(with_writer[0].kind, LeaseInfo::Kind::exclusive);
  expect_this_process(with_writer[0], "holder-test");
  ASSERT_TRUE(redis_.process(writer->release()));

  auto first = redis_.process(catalog.try_read(name_));
  set_holder_label("second-reader");
  auto second = redis_.process(catalog.try_read(name_));
  ASSERT_TRUE(first && second);
  auto readers = described(describe(catalog, name_));
  ASSERT_EQ(readers.size(), 2u);
  std::set<std::string> labels;
  for (const LeaseInfo& reader : readers) {
    EXPECT_EQ(reader.kind, LeaseInfo::Kind::shared);
    EXPECT_GT(reader.time_left, 9s);
    ASSERT_TRUE(reader.holder);
    labels.insert(reader.holder->label);
  }
  EXPECT_EQ(labels, (std::set<std::string>{"holder-test", "second-reader"}));
  EXPECT_TRUE(redis_.process(first->extend()));
  EXPECT_TRUE(redis_.process(first->release()));
  EXPECT_TRUE(redis_.process(second->release()));
  EXPECT_TRUE(described(describe(catalog, name_)).empty());

  const Semaphore<std::string> exports{"holder-permits", 2, 10s};
  auto permit = redis_.process(exports.try_acquire(name_));
  ASSERT_TRUE(permit);
  auto permits = described(describe(exports, name_));
  ASSERT_EQ(permits.size(), 1u);
  EXPECT_EQ(permits[0].kind, LeaseInfo::Kind::permit);
  expect_this_process(permits[0], "second-reader");
  EXPECT_TRUE(redis_.process(permit->extend()));
  EXPECT_TRUE(redis_.process(permit->release()));
  EXPECT_TRUE(described(describe(exports, name_)).empty());
}

TEST_F(HolderTest, TwoLockersWithTheirOwnLabelsStandForTwoHosts) {
  Locker host_a(redis_, "holder-lockers", Fencing::off, "host-a");
  Locker host_b(redis_, "holder-lockers", Fencing::off, "host-b");
  const auto label_in_redis = [&](const Locker& locker, const std::string& name) {
    const StoredLease stored = read_stored_lease(server_->command({"GET", locker.key(name)}).str);
    return stored.holder ? stored.holder->label : std::string("(none)");
  };
  host_a.with_lock(name_ + "a", [&] { EXPECT_EQ(label_in_redis(host_a, name_ + "a"), "host-a"); });
  host_b.with_lock(name_ + "b", [&] { EXPECT_EQ(label_in_redis(host_b, name_ + "b"), "host-b"); });
  // Waiting in turn: the lease granted to the waiter carries the waiter's label.
  Mutex held(host_a, name_);
  held.lock();
  auto waiting = std::async(std::launch::async, [&] {
    host_b.with_lock(name_, [&] { EXPECT_EQ(label_in_redis(host_b, name_), "host-b"); },
                     {.ttl = 5s, .retry_attempts = WithLockOptions::forever});
  });
  EXPECT_EQ(label_in_redis(host_a, name_), "host-a");
  held.unlock();
  waiting.get();
}

TEST_F(HolderTest, ACronIntervalLeaseAndAWaitedLockCarryTheirHolders) {
  const cron::Job job = cron::once_per_interval(redis_, name_, 10s, [&] {
    const StoredLease stored =
        read_stored_lease(server_->command({"GET", "leasehold:Lock:cron:" + name_}).str);
    ASSERT_TRUE(stored.holder);
    EXPECT_EQ(stored.holder->label, "holder-test");
  });
  EXPECT_FALSE(job(cron::Tick{}));

  const Lock<std::string> jobs{"holder-wait", 10s};
  auto token = lock_for(redis_, jobs, name_, 5s);
  ASSERT_TRUE(token);
  const auto held = described(describe(jobs, name_));
  ASSERT_EQ(held.size(), 1u);
  expect_this_process(held[0], "holder-test");
}

TEST_F(HolderTest, TurnedOffALeaseHoldsItsBareId) {
  const Lock<std::string> locks{"holder-off", 10s};
  set_holder_identity(false);
  auto token = redis_.process(locks.try_lock(name_));
  set_holder_identity(true);
  ASSERT_TRUE(token);
  EXPECT_EQ(server_->command({"GET", locks.key(name_)}).str, token->id().hex());
  const auto held = described(describe(locks, name_));
  ASSERT_EQ(held.size(), 1u);
  EXPECT_FALSE(held[0].holder);
  EXPECT_TRUE(redis_.process(token->release()));
}

// A holder's start is stamped by the server's clock: a server whose clock is an hour ahead of
// this host's (a skewed host, seen from the server) gets leases taken an hour ahead, and "held
// for" computed on the same clock is still the real time held.
TEST_F(HolderTest, TheStartIsStampedByTheServersClock) {
  using testing::RedisServer;
  RedisServer skewed(RedisServer::Options{.extra_args = {}, .fake_clock = true});
  skewed.set_clock_offset(1h);
  Client client(skewed.unix_url());
  client.connect();  // the setup measures the server's clock
  const auto ahead = server_clock_now() - std::chrono::system_clock::now();
  EXPECT_GT(ahead, 1h - 5s);
  EXPECT_LT(ahead, 1h + 5s);
  const Lock<std::string> locks{"holder", 10s};
  auto token = client.process(locks.try_lock(name_));
  ASSERT_TRUE(token);
  const auto held = client.process(describe(locks, name_));
  ASSERT_EQ(held.size(), 1u);
  ASSERT_TRUE(held[0].holder);
  const auto from_server = held[0].holder->taken_at - std::chrono::system_clock::now();
  EXPECT_GT(from_server, 1h - 5s) << "stamped by the server's clock, not this host's";
  EXPECT_LT(from_server, 1h + 5s);
  const auto held_for = server_clock_now() - held[0].holder->taken_at;
  EXPECT_GE(held_for, -1s);
  EXPECT_LT(held_for, 5s);
  EXPECT_TRUE(client.process(token->release()));
  // Back to the suite's server: its setup measures that clock again.
  Client back(server_->unix_url());
  back.connect();
  EXPECT_LT(std::chrono::abs(server_clock_now() - std::chrono::system_clock::now()), 5s);
}

}  // namespace
}  // namespace leasehold
