// Torture: two groups of threads (100 each at full scale), each thread on a client of its own,
// take sets of 2 to 5 of 8 fenced names — each set given in an order of its own, so that one
// thread asks for {a, b} while another asks for {b, a} — and hold them for a moment. Nobody may
// deadlock (every wait is granted well before its deadline), and the history checker must find
// no name held by two leases at once and every name's fences increasing. The same runs on a Redis
// Cluster, whose three masters the names are spread over.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "leasehold/leasehold.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

// One thread's rounds: a set, a section on each of its names, the release; every step recorded
// per name, as a lease on that name alone would be. `recorder` is the process's: its lease
// numbers are unique in the process, as the checker needs.
void take_sets(const std::string& url, Recorder& recorder, unsigned seed, Clock::time_point end,
               std::atomic<int>& waits_timed_out, std::atomic<int>& sets) {
  Client redis(url);
  std::mt19937 random(seed);
  const auto lock = Lock<std::string>{"sets", 5s}.with_fencing();
  std::vector<std::string> pool;
  for (int n = 0; n < 8; ++n)
    pool.push_back("n" + std::to_string(n));
  while (Clock::now() < end) {
    std::shuffle(pool.begin(), pool.end(), random);
    const std::vector<std::string> given(pool.begin(), pool.begin() + 2 + random() % 4);
    const LockSet set(lock, std::span<const std::string>(given));
    std::vector<std::uint64_t> leases;
    const std::int64_t called = monotonic_ns();
    for (const std::string& name : set.names()) {
      leases.push_back(recorder.next_lease());
      recorder.record(
          {.t = called, .kind = EventKind::acquire_call, .name = name, .lease = leases.back()});
    }
    auto token = lock_set_until(redis, set, Clock::now() + 60s);
    if (!token) {
      ++waits_timed_out;
      for (std::size_t i = 0; i < leases.size(); ++i)
        recorder.record(
            {.kind = EventKind::acquire_fail, .name = set.names()[i], .lease = leases[i]});
      continue;
    }
    // The deadline on the CLOCK_MONOTONIC scale of the history (the library's clock is another).
    const std::int64_t deadline =
        monotonic_ns() +
        std::chrono::duration_cast<std::chrono::nanoseconds>(token->valid_for()).count();
    for (std::size_t i = 0; i < leases.size(); ++i) {
      recorder.record({.kind = EventKind::acquire_ok,
                       .name = set.names()[i],
                       .lease = leases[i],
                       .deadline = deadline,
                       .value = static_cast<std::int64_t>(token->fences()[i]),
                       .start = called});
      recorder.record({.kind = EventKind::cs_begin, .name = set.names()[i], .lease = leases[i]});
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 + random() % 800));  // the work
    const bool valid = Clock::now() < token->deadline();
    for (std::size_t i = 0; i < leases.size(); ++i) {
      recorder.record(
          {.kind = EventKind::cs_end, .name = set.names()[i], .lease = leases[i], .valid = valid});
      recorder.record(
          {.kind = EventKind::release_call, .name = set.names()[i], .lease = leases[i]});
    }
    const bool released = redis.process(token->release());
    for (std::size_t i = 0; i < leases.size(); ++i)
      recorder.record({.kind = released ? EventKind::release_ok : EventKind::release_fail,
                       .name = set.names()[i],
                       .lease = leases[i]});
    ++sets;
  }
}

// Two groups of `per_group` threads on `url` for `duration`; the figures go out as `figures`.
void run_overlapping_sets(const std::string& url, const std::string& figures, int per_group,
                          std::chrono::milliseconds duration) {
  HistoryDir dir(figures);
  const Clock::time_point end = Clock::now() + duration;
  std::atomic<int> waits_timed_out{0};
  std::atomic<int> sets{0};
  Recorder recorder(dir.file("threads"));
  std::vector<std::thread> threads;
  for (int group = 0; group < 2; ++group) {
    for (int t = 0; t < per_group; ++t) {
      threads.emplace_back(take_sets, url, std::ref(recorder),
                           static_cast<unsigned>(group * 1000 + t), end, std::ref(waits_timed_out),
                           std::ref(sets));
    }
  }
  for (auto& thread : threads)
    thread.join();

  const auto report = check_history(read_history(dir.path()));
  EXPECT_EQ(waits_timed_out.load(), 0) << "a wait ran 60 s without its set: a deadlock";
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_GT(report.valid_sections, 0u) << report.summary();
  EXPECT_GT(report.fenced_grants, 0u) << report.summary();
  report_figures(figures, {{"threads", std::to_string(2 * per_group)},
                           {"sets", std::to_string(sets.load())},
                           {"name_sections", std::to_string(report.sections)},
                           {"overlaps", std::to_string(report.section_overlaps.size())},
                           {"fence_order", std::to_string(report.fence_order.size())},
                           {"timed_out", std::to_string(waits_timed_out.load())}});
}

TEST(TortureLockSets, OverlappingSetsInOppositeOrdersNeverDeadlockNorOverlap) {
  RedisServer server;
  run_overlapping_sets(server.unix_url(), "lock_sets", scaled(100, 6), scaled(20s, 3s));
}

// The same on a Redis Cluster of three masters: the fenced names have slots of their own, spread
// over the masters, so a set is one script per slot's names, sent together, and a busy name in
// one of them gives back what the others took.
TEST(TortureLockSets, OnAClusterSetsAcrossTheMastersNeverDeadlockNorOverlap) {
  RedisCluster cluster;
  const auto lock = Lock<std::string>{"sets", 5s}.with_fencing();
  std::set<int> masters;
  for (int n = 0; n < 8; ++n)
    masters.insert(cluster.master_of(key_slot(lock.key("n" + std::to_string(n)))));
  ASSERT_EQ(masters.size(), 3u) << "the names span every master";
  run_overlapping_sets(cluster.url(), "lock_sets_cluster", scaled(100, 6), scaled(20s, 3s));
}

}  // namespace
}  // namespace leasehold::testing::torture
