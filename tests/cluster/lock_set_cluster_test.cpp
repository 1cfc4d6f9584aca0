// Lock sets (lock_set.hpp) on a real Redis Cluster: names whose keys share a slot are one
// script; names of several slots (on several masters) are one script per slot's names, sent
// together, and still one lease: all or none, extended and released together, lost together.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <cstdio>
#include <future>
#include <leasehold/leasehold.hpp>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "build_paths.hpp"
#include "eventually.hpp"
#include "redis_cluster.hpp"
#include "shared_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisCluster;

class ClusterLockSet : public testing::SharedClusterTest {
 protected:
  // Names of `lock` (`prefix` and a number) whose lease keys are on `count` different masters,
  // `per_master` each.
  template <class L>
  static std::vector<std::string> names_on_masters(const L& lock, std::size_t count,
                                                   std::size_t per_master = 1,
                                                   const std::string& prefix = "n") {
    std::map<int, std::size_t> per;
    std::vector<std::string> names;
    for (int i = 0; names.size() < count * per_master && i < 10000; ++i) {
      const std::string name = prefix + std::to_string(i);
      const int master = master_of(lease_key(lock, name));
      if (!per.contains(master) && per.size() == count)
        continue;
      if (per[master] < per_master) {
        ++per[master];
        names.push_back(name);
      }
    }
    return names;
  }

  template <class L>
  static std::string lease_key(const L& lock, const std::string& name) {
    if constexpr (std::is_same_v<L, RwLock<std::string>>)
      return lock.writer_key(name);
    else
      return lock.key(name);
  }

  static int master_of(const std::string& key) { return cluster_->master_of(key_slot(key)); }

  static Reply on_master(const std::string& key, const std::vector<std::string>& args) {
    return cluster_->command(static_cast<std::size_t>(master_of(key)), args);
  }

  static bool exists(const std::string& key) {
    return on_master(key, {"EXISTS", key}).integer == 1;
  }

  // Whether `key` holds the lease whose value is `value` (its holder's identity may follow).
  static bool holds(const std::string& key, const std::string& value) {
    const Reply reply = on_master(key, {"GET", key});
    return reply.type == Reply::Type::string && reply.str.starts_with(value);
  }
};

TEST_F(ClusterLockSet, NamesOfOneSlotAreOneScript) {
  Client redis(cluster_->url());
  const std::string ns = unique("one-slot");  // the lock views it
  const Lock<std::string> lock{ns, 10s};
  const LockSet order(lock, {"{order-7}:sku-3", "{order-7}:sku-1", "{order-7}:sku-2"});
  auto token = redis.process(order.try_lock());
  ASSERT_TRUE(token);
  for (const std::string& name : order.names())
    EXPECT_FALSE(redis.process(lock.try_lock(name))) << name;
  ASSERT_TRUE(redis.process(token->extend()));
  EXPECT_TRUE(redis.process(token->release()));
  EXPECT_TRUE(redis.process(lock.try_lock("{order-7}:sku-2")));
}

// Fenced names each have their own slot: a set of them spans the masters, and is one lease with
// a fence per name, extended and released as one.
TEST_F(ClusterLockSet, NamesOnThreeMastersAreOneLeaseWithAFencePerName) {
  Client redis(cluster_->url());
  const std::string ns = unique("spread");  // the lock views it
  const auto lock = Lock<std::string>{ns, 10s}.with_fencing();
  const std::vector<std::string> names = names_on_masters(lock, 3, 2);
  ASSERT_EQ(names.size(), 6u);
  const LockSet set(lock, std::span<const std::string>(names));
  std::set<int> masters;
  for (const std::string& key : set.keys())
    masters.insert(master_of(key));
  ASSERT_EQ(masters.size(), 3u);

  auto token = redis.process(set.try_lock());
  ASSERT_TRUE(token);
  ASSERT_EQ(token->fences().size(), names.size());
  for (std::size_t i = 0; i < set.names().size(); ++i) {
    EXPECT_TRUE(holds(set.keys()[i], token->value())) << set.names()[i];
    EXPECT_GE(token->fences()[i], 1u);
    EXPECT_FALSE(redis.process(lock.try_lock(set.names()[i]))) << set.names()[i];
  }
  for (const std::string& key : set.keys())
    on_master(key, {"PEXPIRE", key, "2000"});
  ASSERT_TRUE(redis.process(token->extend()));
  for (const std::string& key : set.keys())
    EXPECT_GT(on_master(key, {"PTTL", key}).integer, 5000) << key;
  EXPECT_TRUE(redis.process(token->release()));
  for (const std::string& key : set.keys())
    EXPECT_FALSE(exists(key)) << key;

  // A name's next fence is larger, whoever takes it.
  auto again = redis.process(lock.try_lock(set.names()[2]));
  ASSERT_TRUE(again);
  EXPECT_GT(again->fence(), token->fences()[2]);
  EXPECT_TRUE(redis.process(again->release()));
}

// A name busy on one master: the set is not taken, and the scripts that took their names on the
// other masters give them back.
TEST_F(ClusterLockSet, ABusyNameOnOneMasterLeavesNoNameTakenOnTheOthers) {
  Client redis(cluster_->url());
  const std::string ns = unique("busy");  // the lock views it
  const auto lock = Lock<std::string>{ns, 10s}.with_fencing();
  const std::vector<std::string> names = names_on_masters(lock, 3);
  ASSERT_EQ(names.size(), 3u);
  const LockSet set(lock, std::span<const std::string>(names));
  auto holder = redis.process(lock.try_lock(names[1]));
  ASSERT_TRUE(holder);
  EXPECT_FALSE(redis.process(set.try_lock()));
  EXPECT_TRUE(
      eventually([&] { return !exists(lock.key(names[0])) && !exists(lock.key(names[2])); }, 5s))
      << "the other masters' names were given back";
  EXPECT_TRUE(holds(lock.key(names[1]), holder->value()));
  EXPECT_TRUE(redis.process(holder->release()));
  auto token = redis.process(set.try_lock());
  ASSERT_TRUE(token);
  EXPECT_TRUE(redis.process(token->release()));
}

// One name gone on its master (expired, or evicted): the extend says the lease is lost, and the
// names the other masters still hold are given back.
TEST_F(ClusterLockSet, ANameLostOnOneMasterLosesTheLeaseAndFreesTheOthers) {
  Client redis(cluster_->url());
  const std::string ns = unique("lost");  // the lock views it
  const auto lock = Lock<std::string>{ns, 10s}.with_fencing();
  const std::vector<std::string> names = names_on_masters(lock, 3);
  ASSERT_EQ(names.size(), 3u);
  const LockSet set(lock, std::span<const std::string>(names));
  auto token = redis.process(set.try_lock());
  ASSERT_TRUE(token);
  on_master(lock.key(names[0]), {"DEL", lock.key(names[0])});
  EXPECT_FALSE(redis.process(token->extend()));
  EXPECT_TRUE(
      eventually([&] { return !exists(lock.key(names[1])) && !exists(lock.key(names[2])); }, 5s))
      << "a lost lease keeps no name";
  EXPECT_FALSE(redis.process(token->release()));
}

// while_held extends every master's names; the work sees them all held past the TTL.
TEST_F(ClusterLockSet, WhileHeldKeepsTheNamesOnEveryMaster) {
  Client redis(cluster_->url());
  const std::string ns = unique("held");  // the lock views it
  const auto lock = Lock<std::string>{ns, 300ms}.with_fencing();
  const std::vector<std::string> names = names_on_masters(lock, 3);
  const LockSet set(lock, std::span<const std::string>(names));
  auto token = redis.process(set.try_lock());
  ASSERT_TRUE(token);
  auto held = while_held(redis, *token, [&](std::stop_token stop) {
    std::this_thread::sleep_for(800ms);  // the work: longer than the TTL, so extended
    int count = 0;
    for (const std::string& key : set.keys())
      count += holds(key, token->value()) ? 1 : 0;
    return stop.stop_requested() ? -1 : count;
  });
  ASSERT_TRUE(held);
  EXPECT_EQ(held.value(), 3);
  EXPECT_TRUE(redis.process(token->release()));
}

// An RwLock's writer set across masters: a reader of one name keeps the whole set out, and
// nothing is left taken on the other masters.
TEST_F(ClusterLockSet, AReaderOnOneMasterKeepsAWriterSetOut) {
  Client redis(cluster_->url());
  const std::string ns = unique("rw");  // the lock views it
  const auto lock = RwLock<std::string>{ns, 10s}.with_fencing();
  const std::vector<std::string> names = names_on_masters(lock, 3);
  ASSERT_EQ(names.size(), 3u);
  const LockSet set(lock, std::span<const std::string>(names));
  auto reader = redis.process(lock.try_read(names[2]));
  ASSERT_TRUE(reader);
  EXPECT_FALSE(redis.process(set.try_lock()));
  EXPECT_TRUE(eventually(
      [&] { return !exists(lock.writer_key(names[0])) && !exists(lock.writer_key(names[1])); },
      5s));
  EXPECT_TRUE(redis.process(reader->release()));
  auto token = redis.process(set.try_lock());
  ASSERT_TRUE(token);
  EXPECT_EQ(token->fences().size(), 3u);
  EXPECT_FALSE(redis.process(lock.try_read(names[0])));
  EXPECT_TRUE(redis.process(token->release()));
}

// An async wait for names on three masters, cancelled while it waits in turn for the busy one:
// it ends with operation_aborted and leaves no key and no place on any master.
TEST_F(ClusterLockSet, ACancelledAsyncWaitLeavesNothingOnAnyMaster) {
  using SetToken = LockToken<LockSet<Lock<std::string>>>;
  Client redis(cluster_->url());
  const std::string ns = unique("cancel");  // the lock views it
  const auto lock = Lock<std::string>{ns, 10s}.with_fencing();
  const std::vector<std::string> names = names_on_masters(lock, 3);
  ASSERT_EQ(names.size(), 3u);
  const LockSet set(lock, std::span<const std::string>(names));
  const std::string busy = set.names()[1];
  auto holder = redis.process(lock.try_lock(busy));
  ASSERT_TRUE(holder);
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  Client client(io.get_executor(), cluster_->url());
  const std::string queue = detail::queue_key(lock.key(busy));

  std::promise<std::pair<std::error_code, bool>> ended;
  asio::cancellation_signal signal;
  asio::post(io, [&] {
    async_lock_set_until(client, set, Clock::now() + 10s, {},
                         asio::bind_cancellation_slot(
                             signal.slot(), [&](std::error_code ec, std::optional<SetToken> token) {
                               ended.set_value({ec, token.has_value()});
                             }));
  });
  ASSERT_TRUE(eventually([&] { return on_master(queue, {"ZCARD", queue}).integer == 1; }, 5s));
  asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });
  const auto [error, got] = ended.get_future().get();
  EXPECT_EQ(error, asio::error::operation_aborted);
  EXPECT_FALSE(got);
  EXPECT_TRUE(eventually(
      [&] {
        return on_master(queue, {"ZCARD", queue}).integer == 0 &&
               !exists(lock.key(set.names()[0])) && !exists(lock.key(set.names()[2]));
      },
      5s))
      << "no place in the queue, no name taken on the other masters";
  EXPECT_TRUE(holds(lock.key(busy), holder->value()));
  EXPECT_TRUE(redis.process(holder->release()));
  client.close();
  work.reset();
  runner.join();
}

// Threads take overlapping sets of names spread over the masters, each in its own order, and wait
// in turn when a name is busy: every thread finishes its rounds (no deadlock), and no name ever
// has two holders at once.
TEST_F(ClusterLockSet, OverlappingSetsAcrossMastersNeverDeadlockNorOverlap) {
  const std::string ns = unique("abba");  // the lock views it
  const auto lock = Lock<std::string>{ns, 5s}.with_fencing();
  const std::vector<std::string> pool = names_on_masters(lock, 3, 2);
  ASSERT_EQ(pool.size(), 6u);
  constexpr int kThreads = 6;
  constexpr int kRounds = 15;
  std::mutex mutex;
  std::map<std::string, int> holders;
  std::atomic<int> overlaps{0};
  std::atomic<int> timeouts{0};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Client redis(cluster_->url());
      for (int round = 0; round < kRounds; ++round) {
        // Three names of the pool, given in an order of this thread's own.
        std::vector<std::string> names;
        for (int k = 0; k < 3; ++k)
          names.push_back(pool[static_cast<std::size_t>((t * 5 + round + k * (t % 2 ? 1 : 5)) %
                                                        static_cast<int>(pool.size()))]);
        const LockSet set(lock, std::span<const std::string>(names));
        auto token = lock_set_until(redis, set, Clock::now() + 30s);
        if (!token) {
          ++timeouts;
          continue;
        }
        {
          const std::lock_guard guard(mutex);
          for (const std::string& name : set.names())
            if (holders[name]++ > 0)
              ++overlaps;
        }
        std::this_thread::sleep_for(2ms);  // the work
        {
          const std::lock_guard guard(mutex);
          for (const std::string& name : set.names())
            --holders[name];
        }
        redis.process(token->release());
      }
      ++done;
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(done.load(), kThreads);
  EXPECT_EQ(timeouts.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
  for (const std::string& name : pool)
    EXPECT_FALSE(exists(lock.key(name))) << name;
}

// `leasehold run NAME... -- COMMAND` on a cluster URL: names whose run-lock keys are on the three
// masters are one lease, with a fence each.
TEST_F(ClusterLockSet, TheCommandLineRunsUnderNamesOnEveryMaster) {
  const RwLock<std::string> run{"run", 30s};  // the leases of `leasehold run`
  const std::vector<std::string> names = names_on_masters(run, 3, 1, unique("cli") + "-");
  ASSERT_EQ(names.size(), 3u);
  std::string command =
      std::string(testing::build_paths::cli) + " --redis '" + cluster_->url() + "' run";
  for (const std::string& name : names)
    command += " " + name;
  command += " -- sh -c 'echo \"$LEASEHOLD_FENCES\"'";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string printed;
  char buffer[512];
  while (const std::size_t got = std::fread(buffer, 1, sizeof buffer, out))
    printed.append(buffer, got);
  const int status = ::pclose(out);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << printed;
  for (const std::string& name : names) {
    EXPECT_NE(printed.find(name + "="), std::string::npos) << printed;
    EXPECT_FALSE(exists(run.writer_key(name))) << name << ": released when the command ended";
  }
}

}  // namespace
}  // namespace leasehold
