// leasehold on a real Redis Cluster: 3 masters + 3 replicas on loopback ports, started by the
// tests (tests/support/redis_cluster.hpp). Suites that break the cluster (resharding, failover)
// start their own.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <cstdio>
#include <leasehold/leasehold.hpp>
#include <map>
#include <set>
#include <thread>

#include "eventually.hpp"
#include "redis_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisCluster;

class ClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = std::make_unique<RedisCluster>(); }
  static void TearDownTestSuite() { cluster_.reset(); }

  static std::string unique(const std::string& what) {
    static std::atomic<int> counter{0};
    return what + "." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  }

  // How many keys each master holds, by node index.
  static std::map<int, long long> keys_per_master() {
    std::map<int, long long> result;
    for (int master : cluster_->masters())
      result[master] = cluster_->command(static_cast<std::size_t>(master), {"DBSIZE"}).integer;
    return result;
  }

  static inline std::unique_ptr<RedisCluster> cluster_;
};

TEST_F(ClusterTest, TheClusterHasThreeMastersEachWithAReplica) {
  EXPECT_EQ(cluster_->masters().size(), 3u);
  Client redis(cluster_->url());
  redis.connect();
  EXPECT_EQ(redis.url().transport, RedisUrl::Transport::cluster);
}

TEST_F(ClusterTest, LocksOnTenThousandNamesSpreadOverAllMastersInOneBatch) {
  Client redis(cluster_->url());
  const std::string ns = unique("spread");
  const Lock<std::string> lock{ns, 30s};
  std::vector<decltype(lock.try_lock(""))> acquires;
  for (int i = 0; i < 10000; ++i)
    acquires.push_back(lock.try_lock("name-" + std::to_string(i)));
  const auto before = keys_per_master();
  auto tokens = redis.process(acquires);
  ASSERT_EQ(tokens.size(), 10000u);
  std::vector<ReleaseLock<Lock<std::string>>> releases;
  for (auto& token : tokens) {
    ASSERT_TRUE(token.has_value()) << token.detail();
    ASSERT_TRUE(token->has_value());
    releases.push_back((*token)->release());
  }
  // Each master holds its share (10 000 keys over 16 384 slots: about a third each).
  const auto during = keys_per_master();
  long long total = 0;
  for (const auto& [master, count] : during) {
    const long long added = count - before.at(master);
    EXPECT_GT(added, 2500) << "master " << master;
    total += added;
  }
  EXPECT_EQ(total, 10000);
  // A second client cannot take any of them.
  Client other(cluster_->url());
  std::vector<TryLock<Lock<std::string>>> contenders;
  for (int i = 0; i < 10000; i += 50)
    contenders.push_back(lock.try_lock("name-" + std::to_string(i)));
  for (auto& outcome : other.process(contenders))
    EXPECT_FALSE(outcome->has_value());
  for (auto& released : redis.process(releases))
    EXPECT_TRUE(*released);
  EXPECT_EQ(keys_per_master(), before);
}

TEST_F(ClusterTest, SyncAndAsyncLockCyclesOnOneConnectionPerMaster) {
  Client redis(cluster_->url());
  const std::string ns = unique("cycles");
  const Lock<std::uint64_t> lock{ns, 10s};
  for (std::uint64_t name = 0; name < 50; ++name) {
    auto token = redis.process(lock.try_lock(name));
    ASSERT_TRUE(token);
    EXPECT_FALSE(redis.process(lock.try_lock(name)));
    EXPECT_TRUE(redis.process(token->extend()));
    EXPECT_TRUE(redis.process(token->release()));
    EXPECT_FALSE(redis.process(token->release()));
  }
  asio::io_context io;
  Client async_redis(io.get_executor(), cluster_->url());
  int done = 0;
  for (std::uint64_t name = 100; name < 164; ++name) {
    asio::co_spawn(
        io,
        [&, name]() -> asio::awaitable<void> {
          auto token = co_await async_redis.async_process(lock.try_lock(name), asio::use_awaitable);
          EXPECT_TRUE(token);
          if (token) {
            EXPECT_TRUE(co_await async_redis.async_process(token->release(), asio::use_awaitable));
          }
          if (++done == 64)
            async_redis.close();
        },
        asio::detached);
  }
  io.run();
  EXPECT_EQ(done, 64);
}

TEST_F(ClusterTest, EveryRwLockKeyOfANameIsInOneSlotOnOneMaster) {
  Client redis(cluster_->url());
  const std::string ns = unique("rw");
  const RwLock<std::string> lock{ns, 10s};
  for (int i = 0; i < 20; ++i) {
    const std::string name = "report-" + std::to_string(i);
    const auto slot = key_slot(lock.writer_key(name));
    EXPECT_EQ(key_slot(lock.readers_key(name)), slot);
    auto writer = redis.process(lock.try_write(name));
    ASSERT_TRUE(writer);
    EXPECT_FALSE(redis.process(lock.try_read(name)));
    const auto master = static_cast<std::size_t>(cluster_->master_of(slot));
    EXPECT_EQ(cluster_->command(master, {"EXISTS", lock.writer_key(name)}).integer, 1);
    EXPECT_TRUE(redis.process(writer->release()));
    auto reader1 = redis.process(lock.try_read(name));
    auto reader2 = redis.process(lock.try_read(name));
    ASSERT_TRUE(reader1 && reader2);
    EXPECT_EQ(cluster_->command(master, {"ZCARD", lock.readers_key(name)}).integer, 2);
    EXPECT_FALSE(redis.process(lock.try_write(name)));
    EXPECT_TRUE(redis.process(reader1->release()));
    EXPECT_TRUE(redis.process(reader2->release()));
  }
}

TEST_F(ClusterTest, RawCommandsAreRoutedByTheKeysTheServerNames) {
  Client redis(cluster_->url());
  const std::string a = unique("raw:a");
  const std::string b = unique("raw:b");
  ASSERT_NE(key_slot(a), key_slot(b));
  EXPECT_EQ(redis.process(Command{"SET", a, "1"}).str, "OK");
  EXPECT_EQ(redis.process(Command{"SET", b, "2"}).str, "OK");
  EXPECT_EQ(redis.process(Command{"GET", a}).str, "1");
  EXPECT_EQ(redis.process(Command{"GET", b}).str, "2");
  EXPECT_EQ(redis.process(Command{"PING"}).str, "PONG");
  EXPECT_EQ(redis.process(Command{"TIME"}).elements.size(), 2u);
  // Keys with one hash tag go together.
  const std::string tag = "{" + unique("tag") + "}";
  EXPECT_EQ(redis.process(Command{"MSET", tag + "x", "1", tag + "y", "2"}).str, "OK");
  // Keys in different slots are refused before anything is sent.
  const auto sets_before = cluster_->command(0, {"INFO", "commandstats"}).str;
  try {
    redis.process(Command{"MSET", a, "3", b, "4"});
    FAIL() << "a cross-slot MSET was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::cross_slot);
    EXPECT_NE(std::string(e.what()).find("hash tag"), std::string::npos) << e.what();
  }
  EXPECT_EQ(redis.process(Command{"GET", a}).str, "1");
  EXPECT_EQ(redis.process(Command{"GET", b}).str, "2");
}

TEST_F(ClusterTest, ABatchOfRawCommandsOverSeveralMastersKeepsItsOrder) {
  Client redis(cluster_->url());
  std::vector<Command> sets;
  std::vector<Command> gets;
  for (int i = 0; i < 200; ++i) {
    const std::string key = unique("order");
    sets.push_back(Command{"SET", key, std::to_string(i)});
    gets.push_back(Command{"GET", key});
  }
  redis.process(sets);
  auto values = redis.process(gets);
  ASSERT_EQ(values.size(), 200u);
  for (int i = 0; i < 200; ++i)
    EXPECT_EQ(values[static_cast<std::size_t>(i)]->str, std::to_string(i));
}

TEST_F(ClusterTest, ScriptsAreLoadedAgainOnEachNodeAfterAFlush) {
  Client redis(cluster_->url());
  const std::string ns = unique("flush");
  const Lock<std::string> lock{ns, 10s};
  std::vector<LockToken<Lock<std::string>>> tokens;
  for (int i = 0; i < 30; ++i)
    tokens.push_back(*redis.process(lock.try_lock(std::to_string(i))));
  for (std::size_t n = 0; n < cluster_->size(); ++n)
    cluster_->command(n, {"SCRIPT", "FLUSH"});
  for (auto& token : tokens)
    EXPECT_TRUE(redis.process(token.release()));
}

TEST_F(ClusterTest, WhileHeldWithLockMutexAndCronWorkUnchanged) {
  Client redis(cluster_->url());
  const std::string ns = unique("held");
  const Lock<std::string> lock{ns, 300ms};
  auto token = redis.process(lock.try_lock("job"));
  ASSERT_TRUE(token);
  Client contender(cluster_->url());
  auto outcome = while_held(redis, *token, [&](std::stop_token) {
    // Three TTLs: only extensions keep it.
    const auto end = Clock::now() + 900ms;
    while (Clock::now() < end) {
      EXPECT_FALSE(contender.process(lock.try_lock("job")));
      std::this_thread::sleep_for(50ms);  // the work being done
    }
    return 7;
  });
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome.value(), 7);
  EXPECT_TRUE(redis.process(token->release()));

  Locker locker(redis, unique("locker"));
  int ran = 0;
  locker.with_lock("invoice:1", [&] {
    ++ran;
    locker.with_lock("invoice:1", [&] { ++ran; });  // reentrant
  });
  EXPECT_EQ(ran, 2);
  Mutex mutex(locker, "invoice:2");
  mutex.lock();
  EXPECT_THROW(locker.with_lock("invoice:2", [] {}, {.ttl = 1s, .retry_attempts = 1}), Error);
  mutex.unlock();

  std::atomic<int> runs{0};
  cron::Scheduler scheduler;
  scheduler.add(unique("cron"), cron::AtLeast{100ms},
                cron::once_per_interval(redis, unique("cron-job"), 10s, [&] { ++runs; }));
  auto running = scheduler.start();
  EXPECT_TRUE(eventually([&] { return runs.load() >= 1; }, 5s));
  running.shutdown();
  EXPECT_EQ(runs.load(), 1);  // the lease is held for the interval: no second run
}

TEST_F(ClusterTest, TheCommandLineToolTakesAClusterUrl) {
  const std::string name = unique("cli");
  const std::string command = std::string(LEASEHOLD_CLI) + " --redis '" + cluster_->url() +
                              "' run " + name + " -- sh -c 'echo ran \"$LEASEHOLD_NAME\"; exit 3'";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  char buffer[256] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  const int status = ::pclose(out);
  EXPECT_EQ(std::string(buffer, n), "ran " + name + "\n");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  // Its list command sees the command's leases on every master.
  Client redis(cluster_->url());
  const RwLock<std::string> run{"run", 30s};  // the leases of `leasehold run`
  std::vector<LockToken<RwLock<std::string>>> tokens;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back(unique("listed"));
    tokens.push_back(*redis.process(run.try_write(names.back())));
  }
  const std::string list = std::string(LEASEHOLD_CLI) + " --redis '" + cluster_->url() + "' list";
  out = ::popen(list.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string listed;
  while (std::size_t got = std::fread(buffer, 1, sizeof(buffer), out))
    listed.append(buffer, got);
  EXPECT_EQ(::pclose(out), 0);
  std::set<int> masters;
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_NE(listed.find(names[i]), std::string::npos) << names[i];
    masters.insert(cluster_->master_of(key_slot(run.writer_key(names[i]))));
  }
  EXPECT_EQ(masters.size(), 3u);  // the names were on every master
  for (auto& token : tokens)
    EXPECT_TRUE(redis.process(token.release()));
}

TEST_F(ClusterTest, ASingleServerGivenAsAClusterIsAClearError) {
  testing::RedisServer single;
  Client redis("redis-cluster://127.0.0.1:" + std::to_string(single.port()));
  try {
    redis.process(Command{"PING"});
    FAIL() << "a non-cluster server was used as a cluster";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed);
    EXPECT_NE(std::string(e.what()).find("not a Redis Cluster node"), std::string::npos)
        << e.what();
  }
}

TEST_F(ClusterTest, UnreachableSeedsTimeOutWithAClearError) {
  ClientOptions options;
  options.command_timeout = 300ms;
  options.connect_timeout = 200ms;
  Client redis("redis-cluster://127.0.0.1:" + std::to_string(testing::free_port()), options);
  std::error_code ec;
  redis.process(Command{"PING"}, ec);
  EXPECT_EQ(ec, errc::command_timeout);
}

// The slot of a lock key moves to another master while workers lock and release names in it:
// MOVED and ASK are followed, no error reaches the workers, and the leases held across the move
// stay held and exclusive.
TEST(ClusterResharding, MovingASlotWithHeldLocksLosesAndDoublesNothing) {
  RedisCluster cluster;
  Client redis(cluster.url());
  const Lock<std::string> lock{"reshard", 30s};
  // Names whose keys share one slot: a hash tag in the name.
  auto name = [](int i) { return "{moving}" + std::to_string(i); };
  const std::uint16_t slot = key_slot(lock.key(name(0)));
  std::vector<LockToken<Lock<std::string>>> held;
  for (int i = 0; i < 50; ++i)
    held.push_back(*redis.process(lock.try_lock(name(i))));

  std::atomic<bool> stop{false};
  std::atomic<long> cycles{0};
  std::atomic<long> errors{0};
  std::atomic<long> doubles{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      Client own(cluster.url());
      int i = 0;
      while (!stop.load()) {
        const std::string n = name(100 + w * 1000 + (i++ % 50));
        try {
          auto token = own.process(lock.try_lock(n));
          if (!token) {
            ++doubles;  // only this worker uses these names
            continue;
          }
          if (!own.process(token->release()))
            ++errors;
          ++cycles;
          // The held ones stay held.
          if (own.process(lock.try_lock(name(i % 50))))
            ++doubles;
        } catch (const Error& e) {
          ADD_FAILURE() << e.what();
          ++errors;
        }
      }
    });
  }
  ASSERT_TRUE(eventually([&] { return cycles.load() > 200; }, 10s));
  const int from = cluster.master_of(slot);
  int to = -1;
  for (int master : cluster.masters())
    if (master != from)
      to = master;
  cluster.move_slot(slot, to);
  EXPECT_EQ(cluster.master_of(slot), to);
  const long at_move = cycles.load();
  ASSERT_TRUE(eventually([&] { return cycles.load() > at_move + 200; }, 10s));
  stop = true;
  for (auto& worker : workers)
    worker.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(doubles.load(), 0);
  // The move was seen by the client: ASK while keys were moving, MOVED after.
  EXPECT_GT(testing::command_calls(cluster.node(static_cast<std::size_t>(to)), "asking"), 0);
  for (auto& token : held)
    EXPECT_TRUE(redis.process(token.extend()));
  EXPECT_EQ(cluster.command(static_cast<std::size_t>(to), {"EXISTS", lock.key(name(0))}).integer,
            1);
  for (auto& token : held)
    EXPECT_TRUE(redis.process(token.release()));
}

// A master is killed: the cluster promotes its replica after cluster-node-timeout, and the client
// follows it. Leases on the killed master that were not yet replicated may be lost (Redis
// replicates asynchronously): the test reports how many.
TEST(ClusterFailover, TheClientFollowsThePromotedReplica) {
  RedisCluster::Options options;
  options.node_timeout = 1000ms;
  RedisCluster cluster(options);
  ClientOptions client_options;
  client_options.command_timeout = 500ms;
  client_options.cluster_refresh_interval = 500ms;
  Client redis(cluster.url(), client_options);
  const Lock<std::string> lock{"failover", 60s};
  std::vector<std::string> names;
  std::vector<LockToken<Lock<std::string>>> held;
  for (int i = 0; i < 300; ++i) {
    names.push_back("name-" + std::to_string(i));
    held.push_back(*redis.process(lock.try_lock(names.back())));
  }
  // Let the replicas catch up, as they normally do within milliseconds.
  for (int master : cluster.masters())
    cluster.command(static_cast<std::size_t>(master), {"WAIT", "1", "1000"});

  const std::uint16_t slot = key_slot(lock.key(names[0]));
  const int victim = cluster.master_of(slot);
  cluster.node(static_cast<std::size_t>(victim)).kill();
  const auto killed_at = Clock::now();

  // Calls on the victim's slots fail (or time out) until the replica is promoted; then they work.
  bool recovered = false;
  Clock::time_point recovered_at;
  while (Clock::now() - killed_at < 15s) {
    std::error_code ec;
    const bool extended = redis.process(held[0].extend(), ec);
    if (!ec) {
      EXPECT_TRUE(extended);
      recovered = true;
      recovered_at = Clock::now();
      break;
    }
  }
  ASSERT_TRUE(recovered);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(recovered_at - killed_at);
  std::cout << "[ figures  ] failover: calls on the killed master's slots worked again after "
            << took.count() << " ms (cluster-node-timeout 1000 ms)\n";
  EXPECT_LT(took, 1000ms + 5s);  // node timeout, election, and the client's refresh
  EXPECT_NE(cluster.master_of(slot), victim);

  // Every lease is still held by its token (with WAIT before the kill none was lost); nobody
  // else can take one.
  int lost = 0;
  int doubled = 0;
  Client other(cluster.url(), client_options);
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (other.process(lock.try_lock(names[i])))
      ++doubled;
    if (!redis.process(held[i].extend()))
      ++lost;
  }
  std::cout << "[ figures  ] failover: " << lost << " of " << held.size() << " leases lost, "
            << doubled << " granted twice\n";
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(doubled, 0);
}

}  // namespace
}  // namespace leasehold
