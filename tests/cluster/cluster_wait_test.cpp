// Notified waiting (leasehold/wait.hpp) on a real Redis Cluster: a waiter queues in its name's
// slot and is told of each release over sharded pub/sub, on the client's one subscriber
// connection per master; the subscription follows the slot when it moves (resharding, failover).
// An election's watches are told of each change the same way.
// Every wait here re-checks only every 1900 ms, so a hand-off far faster than that was a
// notification. Suites that break the cluster (resharding, failover) start their own.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "redis_cluster.hpp"
#include "shared_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisCluster;

// Only a notification can hand a lock over faster than the recheck.
constexpr WaitOptions kSlowRecheck{.recheck = 1900ms, .ticket_ttl = 2000ms};

std::size_t node_index(int node) {
  return static_cast<std::size_t>(node);
}

int master_of_key(const RedisCluster& cluster, const std::string& key) {
  return cluster.master_of(key_slot(key));
}

// How many waiters the queue of `lock_key` holds, on `node`.
long long queued(const RedisCluster& cluster, int node, const std::string& lock_key) {
  return cluster.command(node_index(node), {"ZCARD", detail::queue_key(lock_key)}).integer;
}

// How many connections of `node` are subscribed to the release channel of `lock_key`.
long long subscribers(const RedisCluster& cluster, int node, const std::string& lock_key) {
  const Reply reply = cluster.command(
      node_index(node), {"PUBSUB", "SHARDNUMSUB", detail::released_channel(lock_key)});
  return reply.elements.size() == 2 ? reply.elements[1].integer : -1;
}

// The `ssub` counts of the connections of the client named `name` on `node` (CLIENT LIST: its
// own name, or one that starts with it), those with any.
std::vector<long long> shard_subscriptions(const RedisCluster& cluster, int node,
                                           const std::string& name) {
  std::vector<long long> counts;
  std::istringstream lines(cluster.command(node_index(node), {"CLIENT", "LIST"}).str);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" name=" + name) == std::string::npos)
      continue;
    const auto at = line.find(" ssub=");
    if (at == std::string::npos)
      continue;
    const long long count = std::stoll(line.substr(at + 6));
    if (count > 0)
      counts.push_back(count);
  }
  return counts;
}

// The end of one wait: its token, and when the waiting thread had it.
template <class Token>
struct Waited {
  std::optional<Token> token;
  Clock::time_point at;
};

template <class Token, class Wait>
std::future<Waited<Token>> wait_on_a_thread(Wait wait) {
  return std::async(std::launch::async, [wait = std::move(wait)]() mutable {
    std::optional<Token> token = wait();
    return Waited<Token>{std::move(token), Clock::now()};
  });
}

using LockWait = Waited<LockToken<Lock<std::string>>>;

std::future<LockWait> wait_for_lock(Client& client, const Lock<std::string>& lock,
                                    const std::string& name, std::chrono::milliseconds timeout) {
  return wait_on_a_thread<LockToken<Lock<std::string>>>([&client, &lock, name, timeout] {
    return lock_for(client, lock, name, timeout, kSlowRecheck);
  });
}

bool ready(const std::future<LockWait>& future) {
  return future.wait_for(0s) == std::future_status::ready;
}

long long ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class ClusterWait : public testing::SharedClusterTest {};

// Two names on each master, each held, each with a waiter of one client: the waiters share one
// subscriber connection per master, and each release hands its lock over at once.
TEST_F(ClusterWait, AReleaseHandsTheLockToItsWaiterOnEveryMaster) {
  const std::string ns = unique("handoff");
  const Lock<std::string> lock{ns, 30s};
  std::map<int, std::vector<std::string>> names_by_master;
  std::vector<std::string> names;
  for (int i = 0; names.size() < 6; ++i) {
    const std::string name = "name-" + std::to_string(i);
    auto& on_master = names_by_master[master_of_key(*cluster_, lock.key(name))];
    if (on_master.size() < 2) {
      on_master.push_back(name);
      names.push_back(name);
    }
    ASSERT_LT(i, 1000);
  }
  ASSERT_EQ(names_by_master.size(), 3u);

  Client holder(cluster_->url());
  ClientOptions waiter_options;
  waiter_options.client_name = unique("waiter");
  Client waiting(cluster_->url(), waiter_options);
  std::vector<LockToken<Lock<std::string>>> held;
  for (const std::string& name : names) {
    auto token = holder.process(lock.try_lock(name));
    ASSERT_TRUE(token) << name;
    held.push_back(std::move(*token));
  }
  std::vector<std::future<LockWait>> waiters;
  for (const std::string& name : names)
    waiters.push_back(wait_for_lock(waiting, lock, name, 10s));
  for (const std::string& name : names) {
    const std::string key = lock.key(name);
    const int master = master_of_key(*cluster_, key);
    ASSERT_TRUE(eventually(
        [&] {
          return queued(*cluster_, master, key) == 1 && subscribers(*cluster_, master, key) == 1;
        },
        5s))
        << name << ": the waiter is not queued and subscribed on master " << master << " (queued "
        << queued(*cluster_, master, key) << ", subscribers " << subscribers(*cluster_, master, key)
        << ")";
  }
  // One subscriber connection per master carries both of its names' channels.
  for (const auto& [master, on_master] : names_by_master)
    EXPECT_EQ(shard_subscriptions(*cluster_, master, waiter_options.client_name),
              std::vector<long long>{2})
        << "master " << master;

  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    for (std::size_t later = i; later < names.size(); ++later)
      EXPECT_FALSE(ready(waiters[later])) << names[later] << " was granted while held";
    const auto released_at = Clock::now();
    EXPECT_TRUE(holder.process(held[i].release()));
    ASSERT_EQ(waiters[i].wait_for(5s), std::future_status::ready);
    LockWait waited = waiters[i].get();
    ASSERT_TRUE(waited.token) << "the wait ran out";
    const auto handoff = waited.at - released_at;
    EXPECT_LT(handoff, 500ms) << "the hand-off took " << ms(handoff)
                              << " ms: the notification was not heard (recheck 1900 ms)";
    EXPECT_FALSE(holder.process(lock.try_lock(names[i]))) << "the waiter's lease is not held";
    EXPECT_TRUE(waiting.process(waited.token->release()));
  }
  // Nobody waits: the queues are gone, and so are the subscriptions.
  for (const std::string& name : names) {
    const std::string key = lock.key(name);
    const int master = master_of_key(*cluster_, key);
    EXPECT_EQ(queued(*cluster_, master, key), 0) << name;
    EXPECT_TRUE(eventually([&] { return subscribers(*cluster_, master, key) == 0; }, 5s)) << name;
  }
}

// A watch of an election on each master (one client): each is told its leader at once, then
// the new leader and nobody after its resign, by its master's announcements.
TEST_F(ClusterWait, WatchesOfElectionsOnEveryMasterAreToldEachChange) {
  const std::string ns = unique("watched");  // the election keeps a view of it
  const Election<std::string> elections{ns, 30s};
  std::map<int, std::string> name_of_master;
  for (int i = 0; name_of_master.size() < 3; ++i) {
    const std::string name = "name-" + std::to_string(i);
    name_of_master.emplace(master_of_key(*cluster_, elections.key(name)), name);
    ASSERT_LT(i, 1000);
  }
  Client redis(cluster_->url());
  Client observing(cluster_->url());
  WatchOptions slow;
  slow.recheck = 1900ms;  // only an announcement tells a watch sooner
  std::vector<std::unique_ptr<Watch<std::optional<Leader>>>> watches;
  for (const auto& [master, name] : name_of_master) {
    watches.push_back(
        std::make_unique<Watch<std::optional<Leader>>>(observing, elections.observe(name), slow));
    const auto first = watches.back()->next(Clock::now() + 5s);
    ASSERT_TRUE(first) << name;
    EXPECT_FALSE(*first) << name << ": nobody leads yet";
  }
  std::size_t i = 0;
  for (const auto& [master, name] : name_of_master) {
    SCOPED_TRACE(name + " on master " + std::to_string(master));
    Watch<std::optional<Leader>>& watch = *watches[i++];
    auto leader = wait_for(redis, elections.campaign(name), 5s);
    ASSERT_TRUE(leader);
    auto told = watch.next(Clock::now() + 1s);
    ASSERT_TRUE(told && *told) << "not told of the leader within 1 s";
    EXPECT_EQ((*told)->term, leader->fence());
    ASSERT_TRUE(redis.process(elections.resign(*leader)));
    told = watch.next(Clock::now() + 1s);
    ASSERT_TRUE(told) << "not told of the resign within 1 s";
    EXPECT_FALSE(*told);
  }
}

// A watch of a lock on each master (one client): each is told its holder at once, then each
// take and release by the master's tracking of the key (its looks are 30 s and more away).
TEST_F(ClusterWait, WatchesOfLocksOnEveryMasterAreToldEachChange) {
  const std::string ns = unique("tracked");  // the lock keeps a view of it
  const Lock<std::string> locks{ns, 30s};
  std::map<int, std::string> name_of_master;
  for (int i = 0; name_of_master.size() < 3; ++i) {
    const std::string name = "name-" + std::to_string(i);
    name_of_master.emplace(master_of_key(*cluster_, locks.key(name)), name);
    ASSERT_LT(i, 1000);
  }
  Client redis(cluster_->url());
  Client observing(cluster_->url());
  WatchOptions slow;
  slow.recheck = 100s;
  slow.recheck_unwatched = 30s;
  std::vector<std::unique_ptr<Watch<std::optional<LeaseInfo>>>> watches;
  for (const auto& [master, name] : name_of_master) {
    watches.push_back(
        std::make_unique<Watch<std::optional<LeaseInfo>>>(observing, locks.observe(name), slow));
    const auto first = watches.back()->next(Clock::now() + 5s);
    ASSERT_TRUE(first) << name;
    EXPECT_FALSE(*first) << name << ": nobody holds it yet";
  }
  std::size_t i = 0;
  for (const auto& [master, name] : name_of_master) {
    SCOPED_TRACE(name + " on master " + std::to_string(master));
    auto& watch = *watches[i++];
    auto token = redis.process(locks.try_lock(name));
    ASSERT_TRUE(token);
    auto told = watch.next(Clock::now() + 2s);
    ASSERT_TRUE(told && *told) << "not told of the holder within 2 s";
    EXPECT_EQ((*told)->id_prefix, token->id().hex().substr(0, 8));
    ASSERT_TRUE(redis.process(token->release()));
    told = watch.next(Clock::now() + 2s);
    ASSERT_TRUE(told) << "not told of the release within 2 s";
    EXPECT_FALSE(*told);
  }
}

// RwLock on each master: readers queued together behind a writer get in together at its
// release; the writer queued behind them gets in at the last reader's release.
TEST_F(ClusterWait, ReadersAndWritersAreToldOfEachReleaseOnEveryMaster) {
  const std::string ns = unique("rw");
  const RwLock<std::string> lock{ns, 30s};
  std::map<int, std::string> name_by_master;
  for (int i = 0; name_by_master.size() < 3; ++i) {
    const std::string name = "report-" + std::to_string(i);
    name_by_master.emplace(master_of_key(*cluster_, lock.writer_key(name)), name);
    ASSERT_LT(i, 1000);
  }
  Client holder(cluster_->url());
  Client waiting(cluster_->url());
  using ReadWait = Waited<ReadToken<RwLock<std::string>>>;
  using WriteWait = Waited<LockToken<RwLock<std::string>>>;
  for (const auto& [master, name] : name_by_master) {
    SCOPED_TRACE(name);
    const std::string key = lock.writer_key(name);
    auto writer = holder.process(lock.try_write(name));
    ASSERT_TRUE(writer);
    const auto read = [&, name = name] {
      return read_until(waiting, lock, name, Clock::now() + 10s, kSlowRecheck);
    };
    auto reader1 = wait_on_a_thread<ReadToken<RwLock<std::string>>>(read);
    ASSERT_TRUE(eventually([&] { return queued(*cluster_, master, key) == 1; }, 5s));
    auto reader2 = wait_on_a_thread<ReadToken<RwLock<std::string>>>(read);
    ASSERT_TRUE(eventually([&] { return queued(*cluster_, master, key) == 2; }, 5s));
    auto writer2 = wait_on_a_thread<LockToken<RwLock<std::string>>>([&, name = name] {
      return write_until(waiting, lock, name, Clock::now() + 10s, kSlowRecheck);
    });
    ASSERT_TRUE(eventually(
        [&] {
          return queued(*cluster_, master, key) == 3 && subscribers(*cluster_, master, key) == 1;
        },
        5s));

    auto released_at = Clock::now();
    EXPECT_TRUE(holder.process(writer->release()));
    ASSERT_EQ(reader1.wait_for(5s), std::future_status::ready);
    ASSERT_EQ(reader2.wait_for(5s), std::future_status::ready);
    ReadWait first = reader1.get();
    ReadWait second = reader2.get();
    ASSERT_TRUE(first.token && second.token);
    EXPECT_LT(first.at - released_at, 500ms) << ms(first.at - released_at) << " ms";
    EXPECT_LT(second.at - released_at, 500ms) << ms(second.at - released_at) << " ms";
    EXPECT_NE(writer2.wait_for(0s), std::future_status::ready) << "a writer got in with readers";

    EXPECT_TRUE(waiting.process(first.token->release()));
    EXPECT_NE(writer2.wait_for(50ms), std::future_status::ready) << "a writer got in with a reader";
    released_at = Clock::now();
    EXPECT_TRUE(waiting.process(second.token->release()));
    ASSERT_EQ(writer2.wait_for(5s), std::future_status::ready);
    WriteWait last = writer2.get();
    ASSERT_TRUE(last.token);
    EXPECT_LT(last.at - released_at, 500ms) << ms(last.at - released_at) << " ms";
    EXPECT_FALSE(holder.process(lock.try_read(name)));
    EXPECT_TRUE(waiting.process(last.token->release()));
    EXPECT_EQ(queued(*cluster_, master, key), 0);
  }
}

// The slot of two waited-on names moves to another master while their waiters wait. The queue,
// the tickets and the channel are in the lock key's slot and move with it. One name is released
// right after the move, when its notification may still be lost (the subscriber has not followed
// the slot yet): the recheck covers it. The other is released once the subscription has
// followed the slot: told at once.
TEST(ClusterWaitResharding, WaitersFollowTheirNamesSlotToAnotherMaster) {
  RedisCluster cluster;
  Client holder(cluster.url());
  Client waiting(cluster.url());
  const Lock<std::string> lock{"reshard-wait", 30s};
  const std::string soon = "{moving}released-at-once";
  const std::string later = "{moving}released-later";
  const std::uint16_t slot = key_slot(lock.key(soon));
  ASSERT_EQ(key_slot(lock.key(later)), slot);
  const int from = cluster.master_of(slot);
  int to = -1;
  for (int master : cluster.masters())
    if (master != from)
      to = master;
  ASSERT_GE(to, 0);

  auto soon_held = holder.process(lock.try_lock(soon));
  auto later_held = holder.process(lock.try_lock(later));
  ASSERT_TRUE(soon_held && later_held);
  auto soon_waiter = wait_for_lock(waiting, lock, soon, 15s);
  auto later_waiter = wait_for_lock(waiting, lock, later, 15s);
  for (const std::string& name : {soon, later}) {
    const std::string key = lock.key(name);
    ASSERT_TRUE(eventually(
        [&] { return queued(cluster, from, key) == 1 && subscribers(cluster, from, key) == 1; },
        5s))
        << name;
  }

  cluster.move_slot(slot, to);
  ASSERT_EQ(cluster.master_of(slot), to);
  EXPECT_EQ(cluster.command(node_index(to), {"EXISTS", lock.key(soon)}).integer, 1);
  EXPECT_EQ(cluster.command(node_index(from), {"EXISTS", lock.key(soon)}).integer, 0);
  EXPECT_FALSE(ready(soon_waiter)) << "granted while held";
  auto released_at = Clock::now();
  EXPECT_TRUE(holder.process(soon_held->release()));  // MOVED: to the new master
  ASSERT_EQ(soon_waiter.wait_for(10s), std::future_status::ready);
  LockWait soon_waited = soon_waiter.get();
  ASSERT_TRUE(soon_waited.token) << "the wait ran out";
  const auto soon_handoff = soon_waited.at - released_at;
  std::cout << "[ figures  ] released right after the move: the waiter had it after "
            << ms(soon_handoff) << " ms\n";
  EXPECT_LT(soon_handoff, kSlowRecheck.recheck + 1100ms)
      << ms(soon_handoff) << " ms: longer than a recheck";
  EXPECT_FALSE(holder.process(lock.try_lock(soon)));
  EXPECT_TRUE(waiting.process(soon_waited.token->release()));

  // The other waiter is still queued, now on the new master, and its subscription moved there.
  const std::string key = lock.key(later);
  EXPECT_FALSE(ready(later_waiter)) << "granted while held";
  EXPECT_TRUE(eventually([&] { return queued(cluster, to, key) == 1; }, 5s))
      << "queued on the new master: " << queued(cluster, to, key);
  ASSERT_TRUE(eventually([&] { return subscribers(cluster, to, key) == 1; }, 5s))
      << "the subscription did not follow the slot to master " << to;
  EXPECT_EQ(subscribers(cluster, from, key), 0);
  released_at = Clock::now();
  EXPECT_TRUE(holder.process(later_held->release()));
  ASSERT_EQ(later_waiter.wait_for(5s), std::future_status::ready);
  LockWait later_waited = later_waiter.get();
  ASSERT_TRUE(later_waited.token) << "the wait ran out";
  const auto later_handoff = later_waited.at - released_at;
  std::cout << "[ figures  ] released once the subscription followed: the waiter had it after "
            << ms(later_handoff) << " ms\n";
  EXPECT_LT(later_handoff, 500ms) << ms(later_handoff) << " ms: the notification was not heard";
  EXPECT_TRUE(waiting.process(later_waited.token->release()));
  EXPECT_EQ(queued(cluster, to, key), 0);
}

// The replication offset that the replica of `master` has acknowledged (INFO replication: slave0).
long long acknowledged_offset(const RedisCluster& cluster, int master) {
  const std::string info = cluster.command(node_index(master), {"INFO", "replication"}).str;
  const auto at = info.find("slave0:");
  if (at == std::string::npos)
    return -1;
  const auto offset = info.find("offset=", at);
  return offset == std::string::npos ? -1 : std::stoll(info.substr(offset + 7));
}

long long master_offset(const RedisCluster& cluster, int master) {
  const std::string info = cluster.command(node_index(master), {"INFO", "replication"}).str;
  const auto at = info.find("master_repl_offset:");
  return at == std::string::npos ? -1 : std::stoll(info.substr(at + 19));
}

// The master of two waited-on names is killed; its replica, which has the leases and the
// queue (replication is awaited before the kill), is promoted. One holder releases after the
// failover: its waiter gets the lock, and not before the release. The other holder never
// releases (it died with the master, say) and its lease is short: its waiter gets the lock when
// the lease runs out on the promoted replica, and not before the holder's deadline.
TEST(ClusterWaitFailover, WaitersGetTheLockFromThePromotedReplica) {
  RedisCluster cluster;  // node timeout 1000 ms, one replica per master
  ClientOptions options;
  options.command_timeout = 500ms;
  options.cluster_refresh_interval = 500ms;
  Client holder(cluster.url(), options);
  Client waiting(cluster.url(), options);
  const Lock<std::string> kept_lock{"failover-wait", 30s};
  // The same keys; the abandoned holder's lease is short, the waiters' leases are not.
  const Lock<std::string> short_lock{"failover-wait", 3s};
  const std::string released = "{victim}released";
  const std::string abandoned = "{victim}abandoned";
  const std::uint16_t slot = key_slot(kept_lock.key(released));
  ASSERT_EQ(key_slot(short_lock.key(abandoned)), slot);
  const int victim = cluster.master_of(slot);

  auto released_held = holder.process(kept_lock.try_lock(released));
  auto abandoned_held = holder.process(short_lock.try_lock(abandoned));
  ASSERT_TRUE(released_held && abandoned_held);
  const auto deadline = Clock::now() + 20s;
  auto released_waiter = wait_on_a_thread<LockToken<Lock<std::string>>>(
      [&] { return lock_until(waiting, kept_lock, released, deadline, kSlowRecheck); });
  auto abandoned_waiter = wait_on_a_thread<LockToken<Lock<std::string>>>(
      [&] { return lock_until(waiting, kept_lock, abandoned, deadline, kSlowRecheck); });
  for (const std::string& key : {kept_lock.key(released), short_lock.key(abandoned)}) {
    ASSERT_TRUE(eventually(
        [&] { return queued(cluster, victim, key) == 1 && subscribers(cluster, victim, key) == 1; },
        5s))
        << key;
  }
  const long long written = master_offset(cluster, victim);
  ASSERT_TRUE(eventually([&] { return acknowledged_offset(cluster, victim) >= written; }, 5s))
      << "the replica did not catch up";

  cluster.node(node_index(victim)).kill();
  EXPECT_FALSE(ready(released_waiter)) << "granted before the failover";
  ASSERT_TRUE(eventually(
      [&] {
        const int now = cluster.master_of(slot);
        return now >= 0 && now != victim;
      },
      15s, 20ms))
      << "the replica was not promoted";

  // The release, tried until the client has found the promoted replica.
  std::optional<bool> release_outcome;
  Clock::time_point release_sent{};
  Clock::time_point release_done{};
  ASSERT_TRUE(eventually(
      [&] {
        std::error_code ec;
        release_sent = Clock::now();
        const bool outcome = holder.process(released_held->release(), ec);
        if (ec)
          return false;
        release_done = Clock::now();
        release_outcome = outcome;
        return true;
      },
      10s, 20ms));
  // Replicated before the kill: the promoted replica has the lease, so the release finds it.
  EXPECT_TRUE(*release_outcome) << "the lease was lost in the failover";
  ASSERT_EQ(released_waiter.wait_until(std::chrono::steady_clock::now() + 21s),
            std::future_status::ready);
  LockWait released_waited = released_waiter.get();
  ASSERT_TRUE(released_waited.token) << "the wait ran out";
  EXPECT_LT(released_waited.at, deadline);
  if (*release_outcome) {
    EXPECT_GT(released_waited.at, release_sent)
        << "the waiter had the lock before the holder released it";
  }
  // Told by the subscription that followed the slot to the promoted replica, or at the latest
  // by a recheck (which may first see a try to the dead master time out).
  EXPECT_LT(released_waited.at - release_done,
            kSlowRecheck.recheck + options.command_timeout + 1000ms)
      << ms(released_waited.at - release_done) << " ms after the release";
  std::cout << "[ figures  ] after the failover: the waiter had the released lock "
            << ms(released_waited.at - release_done) << " ms after the release returned\n";

  ASSERT_EQ(abandoned_waiter.wait_until(std::chrono::steady_clock::now() + 21s),
            std::future_status::ready);
  LockWait abandoned_waited = abandoned_waiter.get();
  ASSERT_TRUE(abandoned_waited.token) << "the wait ran out";
  EXPECT_LT(abandoned_waited.at, deadline);
  EXPECT_GE(abandoned_waited.at, abandoned_held->deadline())
      << "the waiter had the lock " << ms(abandoned_held->deadline() - abandoned_waited.at)
      << " ms before the holder's lease ran out";
  std::cout << "[ figures  ] the abandoned lease: the waiter had it "
            << ms(abandoned_waited.at - abandoned_held->deadline())
            << " ms after the holder's deadline\n";

  // The waiter holds both now: nobody else takes them, and the old holder's late release of
  // the abandoned one does not free it.
  Client other(cluster.url(), options);
  EXPECT_FALSE(other.process(kept_lock.try_lock(released)));
  EXPECT_FALSE(other.process(kept_lock.try_lock(abandoned)));
  EXPECT_FALSE(holder.process(abandoned_held->release()));
  EXPECT_FALSE(other.process(kept_lock.try_lock(abandoned)));
  EXPECT_TRUE(waiting.process(released_waited.token->release()));
  EXPECT_TRUE(waiting.process(abandoned_waited.token->release()));
}

}  // namespace
}  // namespace leasehold
