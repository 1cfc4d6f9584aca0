// Watching a Lock's holder against a real redis-server: the lease at once, then each change —
// a try_lock, a release, an expiry, a DEL, a value another client SETs — told by the server's
// tracking of the key, long before any recheck; an extension is no change; several clients'
// watches are all told; tracking comes back after its connections are killed; a user refused
// the tracking commands still watches, by looking every recheck_unwatched. An RwLock's and a
// Semaphore's leases are watched the same way, a reader or a permit that runs out among others
// included.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "client_list.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "minimal_acl.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using Seen = std::optional<LeaseInfo>;

// Without tracking, a change would be seen at the next look: 30 s away (recheck_unwatched) or
// 100 s (recheck), far past every bound below.
WatchOptions slow_looks() {
  WatchOptions options;
  options.recheck = 100s;
  options.recheck_unwatched = 30s;
  return options;
}

class LockWatchTest : public testing::SharedServerTest {
 protected:
  static Seen next_within(Watch<Seen>& watch, Clock::duration within = 2s) {
    auto seen = watch.next(Clock::now() + within);
    if (!seen)
      ADD_FAILURE() << "no state within " << std::chrono::duration<double>(within).count() << " s";
    return seen.value_or(Seen{});
  }

  ClientOptions named(const std::string& name) const {
    ClientOptions options;
    options.client_name = name;
    return options;
  }

  std::string name_ = "lw" + std::to_string(unique_number());
  Lock<std::string> locks_{"watched", 10s};
  Client redis_{server_->unix_url()};
};

TEST_F(LockWatchTest, ATakeARawSetADeleteAndAReleaseAreEachToldAtOnce) {
  Watch watch(redis_, locks_.observe(name_), slow_looks());
  EXPECT_FALSE(next_within(watch)) << "nobody holds it yet";

  auto token = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  Seen seen = next_within(watch);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->id_prefix, token->id().hex().substr(0, 8));
  ASSERT_TRUE(seen->holder);
  EXPECT_EQ(seen->holder->pid, static_cast<std::int64_t>(::getpid()));
  EXPECT_GT(seen->time_left, 5s);

  ASSERT_TRUE(redis_.process(token->release()));
  EXPECT_FALSE(next_within(watch)) << "released";

  // Another client, not leasehold: whatever it SETs holds the name.
  server_->command({"SET", locks_.key(name_), "someone-else", "PX", "5000"});
  seen = next_within(watch);
  ASSERT_TRUE(seen);
  EXPECT_FALSE(seen->holder);
  EXPECT_GT(seen->time_left, 1s);

  server_->command({"DEL", locks_.key(name_)});
  EXPECT_FALSE(next_within(watch)) << "deleted";
  EXPECT_FALSE(watch.next(Clock::now() + 200ms)) << "nothing else changed";
}

TEST_F(LockWatchTest, AnExtensionIsNoChangeAndAnExpiryIsToldSoonAfterTheDeadline) {
  const Lock<std::string> short_lived{"watched", 600ms};
  Watch watch(redis_, short_lived.observe(name_), slow_looks());
  EXPECT_FALSE(next_within(watch));
  auto token = redis_.process(short_lived.try_lock(name_));
  ASSERT_TRUE(token);
  ASSERT_TRUE(next_within(watch));

  ASSERT_TRUE(redis_.process(token->extend()));
  EXPECT_FALSE(watch.next(Clock::now() + 300ms)) << "an extension is not a change";

  const auto deadline = token->deadline();
  EXPECT_FALSE(next_within(watch, 3s)) << "the lease ran out";
  EXPECT_LT(Clock::now() - deadline, 1s);
}

TEST_F(LockWatchTest, EveryClientsWatchesAreTold) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Watch<Seen>>> watches;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<Client>(server_->unix_url()));
    for (int j = 0; j < 2; ++j) {
      watches.push_back(
          std::make_unique<Watch<Seen>>(*clients.back(), locks_.observe(name_), slow_looks()));
      EXPECT_FALSE(next_within(*watches.back()));
    }
  }
  auto token = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  for (auto& watch : watches) {
    const Seen seen = next_within(*watch);
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen->id_prefix, token->id().hex().substr(0, 8));
  }
  ASSERT_TRUE(redis_.process(token->release()));
  for (auto& watch : watches)
    EXPECT_FALSE(next_within(*watch));
}

TEST_F(LockWatchTest, TrackingComesBackAfterItsConnectionsAreKilled) {
  const std::string client_name = "lw-killed-" + name_;
  Client observer(server_->unix_url(), named(client_name));
  Watch watch(observer, locks_.observe(name_), slow_looks());
  EXPECT_FALSE(next_within(watch));
  for (const char* connection : {":subscriber", ":tracker"}) {
    SCOPED_TRACE(connection);
    const std::string id = testing::client_id(*server_, client_name + connection);
    ASSERT_FALSE(id.empty());
    server_->command({"CLIENT", "KILL", "ID", id});
    // Made again (a new id), then armed again: the change that follows is told.
    ASSERT_TRUE(eventually([&] {
      const std::string now = testing::client_id(*server_, client_name + connection);
      return !now.empty() && now != id;
    }));
    auto token = redis_.process(locks_.try_lock(name_));
    ASSERT_TRUE(token);
    // A look made when tracking came back may come first; it finds the same holder.
    EXPECT_TRUE(next_within(watch, 3s));
    ASSERT_TRUE(redis_.process(token->release()));
    EXPECT_FALSE(next_within(watch, 3s));
  }
}

TEST_F(LockWatchTest, AUserRefusedTrackingStillWatchesByLookingEveryUncheckedRecheck) {
  const std::string user = "lw-" + name_;
  server_->command(testing::waiting_acl_setuser(user, "pw"));
  // The observers' hash commands are allowed; CLIENT TRACKING, CACHING and ID are not.
  server_->command({"ACL", "SETUSER", user, "+hset", "+hget", "+hmget", "+hdel"});
  Client limited("unix://" + user + ":pw@" + server_->socket_path());
  WatchOptions options;
  options.recheck_unwatched = 300ms;
  Watch watch(limited, locks_.observe(name_), options);
  EXPECT_FALSE(next_within(watch));
  auto token = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(token);
  EXPECT_TRUE(next_within(watch, 2s)) << "seen at a look, within recheck_unwatched";
  ASSERT_TRUE(redis_.process(token->release()));
  EXPECT_FALSE(next_within(watch, 2s));
}

TEST_F(LockWatchTest, AFencedLocksHolderIsWatchedToo) {
  const Lock<std::string> fenced = locks_.with_fencing();
  Watch watch(redis_, fenced.observe(name_), slow_looks());
  EXPECT_FALSE(next_within(watch));
  auto token = redis_.process(fenced.try_lock(name_));
  ASSERT_TRUE(token);
  const Seen seen = next_within(watch);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->id_prefix, token->id().hex().substr(0, 8));
  ASSERT_TRUE(redis_.process(token->release()));
  EXPECT_FALSE(next_within(watch));
}

TEST_F(LockWatchTest, AKeyOfAnotherTypeEndsTheWatchWithAnError) {
  server_->command({"HSET", locks_.key(name_), "f", "v"});
  Watch watch(redis_, locks_.observe(name_), slow_looks());
  EXPECT_THROW(watch.next(Clock::now() + 3s), Error);
  server_->command({"DEL", locks_.key(name_)});
}

using Leases = std::vector<LeaseInfo>;

class LeasesWatchTest : public LockWatchTest {
 protected:
  static Leases leases_within(Watch<Leases>& watch, Clock::duration within = 2s) {
    auto seen = watch.next(Clock::now() + within);
    if (!seen)
      ADD_FAILURE() << "no state within " << std::chrono::duration<double>(within).count() << " s";
    return seen.value_or(Leases{});
  }
  // The leases' kinds and id prefixes, in the order of `ids`' tokens.
  template <class... Token>
  static std::vector<std::pair<LeaseInfo::Kind, std::string>> of(LeaseInfo::Kind kind,
                                                                 const Token&... tokens) {
    return {{kind, tokens.id().hex().substr(0, 8)}...};
  }
  static std::vector<std::pair<LeaseInfo::Kind, std::string>> sorted(const Leases& leases) {
    std::vector<std::pair<LeaseInfo::Kind, std::string>> found;
    for (const LeaseInfo& lease : leases)
      found.emplace_back(lease.kind, lease.id_prefix);
    std::sort(found.begin(), found.end());
    return found;
  }
  template <class... Token>
  static std::vector<std::pair<LeaseInfo::Kind, std::string>> sorted_of(LeaseInfo::Kind kind,
                                                                        const Token&... tokens) {
    auto expected = of(kind, tokens...);
    std::sort(expected.begin(), expected.end());
    return expected;
  }
};

TEST_F(LeasesWatchTest, AnRwLocksReadersAndWriterAreEachToldAsTheyComeAndGo) {
  const RwLock<std::string> reports{"watched", 10s};
  Watch watch(redis_, reports.observe(name_), slow_looks());
  EXPECT_TRUE(leases_within(watch).empty()) << "nobody holds it yet";

  auto first = redis_.process(reports.try_read(name_));
  ASSERT_TRUE(first);
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::shared, *first));
  auto second = redis_.process(reports.try_read(name_));
  ASSERT_TRUE(second);
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::shared, *first, *second));

  ASSERT_TRUE(redis_.process(first->extend()));
  EXPECT_FALSE(watch.next(Clock::now() + 300ms)) << "an extension is not a change";

  ASSERT_TRUE(redis_.process(first->release()));
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::shared, *second));
  ASSERT_TRUE(redis_.process(second->release()));
  EXPECT_TRUE(leases_within(watch).empty());

  auto writer = redis_.process(reports.try_write(name_));
  ASSERT_TRUE(writer);
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::exclusive, *writer));
  EXPECT_EQ(redis_.process(reports.force_release(name_)), 1);
  EXPECT_TRUE(leases_within(watch).empty()) << "forced out";
}

TEST_F(LeasesWatchTest, AReaderThatRunsOutAmongOthersIsToldSoonAfterItsDeadline) {
  // One name, two TTLs: the short reader's lease ends with no write to the readers' set.
  const RwLock<std::string> short_lived{"watched", 600ms};
  const RwLock<std::string> long_lived{"watched", 10s};
  Watch watch(redis_, long_lived.observe(name_), slow_looks());
  EXPECT_TRUE(leases_within(watch).empty());
  auto staying = redis_.process(long_lived.try_read(name_));
  ASSERT_TRUE(staying);
  ASSERT_EQ(leases_within(watch).size(), 1u);
  auto leaving = redis_.process(short_lived.try_read(name_));
  ASSERT_TRUE(leaving);
  ASSERT_EQ(leases_within(watch).size(), 2u);
  const auto deadline = leaving->deadline();
  EXPECT_EQ(sorted(leases_within(watch, 3s)), sorted_of(LeaseInfo::Kind::shared, *staying));
  EXPECT_LT(Clock::now() - deadline, 1s) << "looked at when the soonest lease would run out";
  ASSERT_TRUE(redis_.process(staying->release()));
}

TEST_F(LeasesWatchTest, ASemaphoresPermitsAreEachToldAsTheyComeAndGo) {
  const Semaphore<std::string> exports{"watched", 2, 10s};
  Watch watch(redis_, exports.observe(name_), slow_looks());
  EXPECT_TRUE(leases_within(watch).empty());
  auto first = redis_.process(exports.try_acquire(name_));
  ASSERT_TRUE(first);
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::permit, *first));
  auto second = redis_.process(exports.try_acquire(name_));
  ASSERT_TRUE(second);
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::permit, *first, *second));
  ASSERT_TRUE(redis_.process(second->release()));
  EXPECT_EQ(sorted(leases_within(watch)), sorted_of(LeaseInfo::Kind::permit, *first));
  server_->command({"DEL", exports.holders_key(name_)});
  EXPECT_TRUE(leases_within(watch).empty()) << "deleted behind the library's back";
  EXPECT_FALSE(watch.next(Clock::now() + 200ms)) << "nothing else changed";
}

TEST_F(LeasesWatchTest, AKeyOfAnotherTypeEndsTheWatchWithAnError) {
  const Semaphore<std::string> exports{"watched", 2, 10s};
  server_->command({"SET", exports.holders_key(name_), "x"});
  Watch watch(redis_, exports.observe(name_), slow_looks());
  EXPECT_THROW(watch.next(Clock::now() + 3s), Error);
  server_->command({"DEL", exports.holders_key(name_)});
}

}  // namespace
}  // namespace leasehold
