// leasehold on a real Redis Cluster: 3 masters + 3 replicas on loopback ports, started by the
// tests (tests/support/redis_cluster.hpp) and shared by the suite. Suites that break a cluster
// (resharding, failover: cluster_topology_test.cpp) start their own.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <cstdio>
#include <future>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "build_paths.hpp"
#include "eventually.hpp"
#include "key_count.hpp"
#include "redis_cluster.hpp"
#include "shared_cluster.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisCluster;

class ClusterTest : public testing::SharedClusterTest {
 protected:
  // How many keys each master holds, by node index.
  static std::map<int, long long> keys_per_master() {
    std::map<int, long long> result;
    for (int master : cluster_->masters())
      result[master] = cluster_->command(static_cast<std::size_t>(master), {"DBSIZE"}).integer;
    return result;
  }
};

TEST_F(ClusterTest, TheClusterHasThreeMastersEachWithAReplica) {
  EXPECT_EQ(cluster_->masters().size(), 3u);
  Client redis(cluster_->url());
  redis.connect();
  EXPECT_EQ(redis.url().transport, RedisUrl::Transport::cluster);
}

TEST_F(ClusterTest, LocksOnTenThousandNamesSpreadOverAllMastersInOneBatch) {
  // Ten thousand scripts in one batch take seconds under a sanitizer on a busy machine; the test
  // is of where they go, not of how fast.
  ClientOptions patient;
  patient.command_timeout = 20s;
  Client redis(cluster_->url(), patient);
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
  Client other(cluster_->url(), patient);
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

TEST_F(ClusterTest, TheStatusOfNamesOfEveryKindOnEveryMasterIsReadInOneBatch) {
  Client redis(cluster_->url());
  const std::string ns = unique("status");
  const auto rw = RwLock<std::string>{ns, 10s}.with_fencing();
  const Semaphore<std::string> permits{ns, 2, 10s};
  std::vector<LockToken<RwLock<std::string>>> writers;
  std::vector<PermitToken<Semaphore<std::string>>> holders;
  std::vector<LeaseStatusQuery<>> batch;
  std::set<int> masters;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "n" + std::to_string(i);
    writers.push_back(*redis.process(rw.try_write(name)));
    holders.push_back(*redis.process(permits.try_acquire(name)));
    batch.emplace_back(lease_status(rw, name));
    batch.emplace_back(lease_status(permits, name));
    masters.insert(cluster_->master_of(key_slot(rw.writer_key(name))));
  }
  EXPECT_EQ(masters.size(), 3u) << "the names are on every master";
  const std::vector<Result<LeaseStatus>> read = redis.process(batch);
  ASSERT_EQ(read.size(), 60u);
  for (std::size_t i = 0; i < writers.size(); ++i) {
    const LeaseStatus& writer = read[2 * i].value();
    ASSERT_EQ(writer.leases.size(), 1u) << i;
    EXPECT_EQ(writer.leases[0].id_prefix, writers[i].id().hex().substr(0, 8)) << i;
    EXPECT_EQ(writer.fence, writers[i].fence()) << i;
    const LeaseStatus& permit = read[2 * i + 1].value();
    ASSERT_EQ(permit.leases.size(), 1u) << i;
    EXPECT_EQ(permit.leases[0].id_prefix, holders[i].id().hex().substr(0, 8)) << i;
    EXPECT_EQ(permit.permits, 2u) << i;
  }
  for (std::size_t i = 0; i < writers.size(); ++i) {
    const std::string name = "n" + std::to_string(i);
    EXPECT_TRUE(redis.process(rw.release_by_id(name, writers[i].id()))) << i;
    EXPECT_EQ(redis.process(permits.force_release(name)), 2) << i;
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
  const std::string command = std::string(testing::build_paths::cli) + " --redis '" +
                              cluster_->url() + "' run " + name +
                              " -- sh -c 'echo ran \"$LEASEHOLD_NAME\"; exit 3'";
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
  const std::string list =
      std::string(testing::build_paths::cli) + " --redis '" + cluster_->url() + "' list";
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

// A Lock's and an RwLock's keys of one namespace and name share a hash tag, so their slot and its
// fence counter: each grant of either gets the counter's next number (the counter is set ahead of
// the clock, which fences never fall below).
TEST_F(ClusterTest, FencedLocksKeepTheirCounterInTheLocksSlot) {
  Client redis(cluster_->url());
  const std::string ns = unique("fenced");
  const auto lock = Lock<std::string>{ns, 10s}.with_fencing();
  const auto rw = RwLock<std::string>{ns, 10s}.with_fencing();
  std::set<int> masters;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "n{" + std::to_string(i) + "}";  // braces in names are escaped
    masters.insert(cluster_->master_of(key_slot(lock.key(name))));
    EXPECT_EQ(key_slot(lock.fence_counter_key(name)), key_slot(lock.key(name)));
    // Ahead of the clock by 1000 s: the next fences count on from it.
    const auto clock = std::chrono::system_clock::now().time_since_epoch();
    std::uint64_t last = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(clock + 1000s).count());
    cluster_->command(
        static_cast<std::size_t>(cluster_->master_of(key_slot(lock.fence_counter_key(name)))),
        {"SET", lock.fence_counter_key(name), std::to_string(last)});
    for (int round = 0; round < 2; ++round) {
      auto token = redis.process(lock.try_lock(name));
      ASSERT_TRUE(token && token->fence());
      EXPECT_EQ(*token->fence(), last + 1) << name;
      EXPECT_TRUE(redis.process(token->release()));
      auto writer = redis.process(rw.try_write(name));
      ASSERT_TRUE(writer && writer->fence());
      EXPECT_EQ(*writer->fence(), *token->fence() + 1) << name;
      last = *writer->fence();
      EXPECT_TRUE(redis.process(writer->release()));
    }
  }
  EXPECT_EQ(masters.size(), 3u);
}

// 100 000 fenced names, each granted once: at most one counter per hash slot (16 384), where the
// per-name layout left 100 000 (a single server keeps one: FenceCounterTest).
TEST_F(ClusterTest, ManyFencedNamesLeaveAtMostOneCounterPerSlot) {
  const std::string prefix = unique("many");
  const Lock<std::string> lock = Lock<std::string>{"names", 60s, prefix}.with_fencing();
  constexpr int kNames = 100'000;
  constexpr int kBatch = 2'000;
  // Batches of grants, each within its own time: a loaded machine (or a sanitizer) may take a
  // while, which is not what this test is about.
  ClientOptions options;
  options.command_timeout = 60s;
  Client client(cluster_->url(), options);
  std::set<std::uint16_t> slots;
  for (int start = 0; start < kNames; start += kBatch) {
    std::vector<TryLock<Lock<std::string>>> batch;
    for (int n = start; n < start + kBatch; ++n) {
      batch.push_back(lock.try_lock(std::to_string(n)));
      slots.insert(key_slot(lock.key(std::to_string(n))));
    }
    for (auto& granted : client.process(batch))
      ASSERT_TRUE(granted.value());
  }
  std::size_t counters = 0;
  for (const int master : cluster_->masters())
    counters +=
        testing::count_keys(cluster_->node(static_cast<std::size_t>(master)), prefix + ":Fences*");
  EXPECT_EQ(counters, slots.size());
  EXPECT_LE(counters, std::size_t{kClusterSlots});
  RecordProperty("fence_counters", static_cast<int>(counters));
  std::cout << kNames << " fenced names: " << counters << " fence counters\n";
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

TEST_F(ClusterTest, TakingALockInTurnKeepsTheQueueInTheLocksSlot) {
  Client redis(cluster_->url());
  const std::string ns = unique("turn");
  for (const Lock<std::string>& lock :
       {Lock<std::string>(ns, 10s), Lock<std::string>(ns, 10s).with_fencing()}) {
    for (const std::string name : {"a", "b}c", "{d}"}) {
      auto holder = redis.process(lock.try_lock(name));
      ASSERT_TRUE(holder);
      const WaitTicket first;
      const WaitTicket second;
      EXPECT_EQ(redis.process(try_lock_in_turn(lock, name, first)).position, 1u);
      EXPECT_EQ(redis.process(try_lock_in_turn(lock, name, second)).position, 2u);
      ASSERT_TRUE(redis.process(holder->release()));
      EXPECT_FALSE(redis.process(try_lock_in_turn(lock, name, second)).token);
      const auto turn = redis.process(try_lock_in_turn(lock, name, first));
      ASSERT_TRUE(turn.token) << name;
      EXPECT_TRUE(redis.process(turn.token->release()));
      EXPECT_TRUE(redis.process(leave_queue(lock, name, second)));
    }
  }
}

TEST_F(ClusterTest, ACallNotRoutedYetIsCancelledAtOnce) {
  ClientOptions options;
  options.command_timeout = 5s;
  options.connect_timeout = 200ms;
  Client redis("redis-cluster://127.0.0.1:" + std::to_string(testing::free_port()), options);
  asio::cancellation_signal cancel;
  std::promise<std::error_code> ended;
  redis.async_process(Command{"GET", "k"},
                      asio::bind_cancellation_slot(
                          cancel.slot(), [&](std::error_code ec, Reply) { ended.set_value(ec); }));
  cancel.emit(asio::cancellation_type::total);  // nothing of it can have run: it has no node
  auto future = ended.get_future();
  ASSERT_EQ(future.wait_for(2s), std::future_status::ready) << "the cancellation was not heard";
  EXPECT_EQ(future.get(), std::error_code(asio::error::operation_aborted));
}

TEST_F(ClusterTest, AnAcquireCancelledInFlightEndsAtOnceAndReleasesWhatItTook) {
  Client redis(cluster_->url());
  const std::string ns = unique("cancel");
  const Lock<std::string> lock{ns, 30s};
  const std::string key = lock.key("job");
  const auto master = static_cast<std::size_t>(cluster_->master_of(key_slot(key)));
  redis.process(lock.try_lock("warm-up"));  // the slot map is known
  // Writes wait on that master until the pause ends; reads (the checks below) go on.
  const Reply paused = cluster_->command(master, {"CLIENT", "PAUSE", "1500", "WRITE"});
  ASSERT_FALSE(paused.is_error()) << paused.str;
  asio::cancellation_signal cancel;
  std::promise<std::error_code> ended;
  redis.async_process(lock.try_lock("job"),
                      asio::bind_cancellation_slot(
                          cancel.slot(), [&](std::error_code ec, auto) { ended.set_value(ec); }));
  auto future = ended.get_future();
  // A sent call may have run: only a terminal cancellation ends it. (The slot map is known and
  // the node's connection idle: the acquire went out before the cancellation reached it.)
  cancel.emit(asio::cancellation_type::partial);
  EXPECT_EQ(future.wait_for(300ms), std::future_status::timeout)
      << "a partial cancellation ended a call that was sent";
  cancel.emit(asio::cancellation_type::terminal);
  ASSERT_EQ(future.wait_for(1s), std::future_status::ready) << "the cancellation was not heard";
  EXPECT_EQ(future.get(), std::error_code(asio::error::operation_aborted));
  // A write to the same slot waits out the pause behind the acquire and its release.
  std::string probe;
  for (int i = 0; probe.empty() || key_slot(probe) != key_slot(key); ++i)
    probe = unique("probe") + "." + std::to_string(i);
  cluster_->command(master, {"SET", probe, "1", "PX", "10000"});
  EXPECT_TRUE(eventually(
      [&] {
        return cluster_->command(master, {"EXISTS", key}).integer == 0;
      },
      5s))
      << "a cancelled acquire left its lease behind";
  EXPECT_TRUE(redis.process(lock.try_lock("job"))) << "the key is free";
}

}  // namespace
}  // namespace leasehold
