// Cron jobs against a real redis-server, in real time with short intervals; threads with
// connections of their own, and separate processes, stand in for replicas.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "build_paths.hpp"
#include "captured_log.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

extern char** environ;

namespace leasehold::cron {
namespace {

using namespace std::chrono_literals;
using leasehold::testing::CapturedLog;
using leasehold::testing::command_calls;
using leasehold::testing::eventually;
using leasehold::testing::RedisServer;

// Start times of runs, from any thread.
struct RunLog {
  std::mutex mutex;
  std::vector<Clock::time_point> starts;
  void record() {
    std::lock_guard lock(mutex);
    starts.push_back(Clock::now());
  }
  std::vector<Clock::time_point> sorted() {
    std::lock_guard lock(mutex);
    auto copy = starts;
    std::sort(copy.begin(), copy.end());
    return copy;
  }
};

// The smallest gap between consecutive starts.
Clock::duration min_gap(const std::vector<Clock::time_point>& starts) {
  Clock::duration gap = Clock::duration::max();
  for (std::size_t i = 1; i < starts.size(); ++i)
    gap = std::min(gap, starts[i] - starts[i - 1]);
  return gap;
}

long long to_ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class CronTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "job" + std::to_string(unique_number());
};

TEST_F(CronTest, FiveReplicasAtRandomOffsetsRunTheJobOncePerLeaseAcrossTheDeployment) {
  constexpr auto kInterval = 400ms;
  constexpr auto kLease = 300ms;
  constexpr int kIntervals = 25;
  RunLog runs;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> offset_ms(0, 399);
  const auto start = Clock::now();
  const auto end = start + kInterval * kIntervals;
  std::vector<std::thread> replicas;
  for (int r = 0; r < 5; ++r) {
    const auto offset = std::chrono::milliseconds(offset_ms(random));
    replicas.emplace_back([&, offset] {
      std::this_thread::sleep_until(start + offset);  // the replica's own start time
      Client redis(server_->unix_url());
      Scheduler scheduler;
      scheduler.add(name_, AtLeast{kInterval},
                    once_per_interval(redis, name_, kInterval,
                                      [&](const Tick& tick) {
                                        EXPECT_FALSE(tick.slot.has_value())
                                            << "only aligned runs have a slot";
                                        runs.record();
                                      },
                                      {.lease = kLease}));
      auto running = scheduler.start();
      std::this_thread::sleep_until(end);  // the replica's lifetime
      running.shutdown();
    });
  }
  for (auto& replica : replicas)
    replica.join();
  const auto starts = runs.sorted();
  // At most once per lease: two runs are never closer than the lease (minus the reply latency).
  EXPECT_GE(min_gap(starts), kLease - 50ms) << "two replicas ran the same interval";
  const auto span = end - start;
  EXPECT_LE(static_cast<long long>(starts.size()), span / kLease + 1);
  // ...and at least once in nearly every interval.
  EXPECT_GE(static_cast<int>(starts.size()), kIntervals - 3);
  std::cout << "5 replicas, " << kIntervals << " intervals of " << to_ms(kInterval) << " ms, lease "
            << to_ms(kLease) << " ms: " << starts.size() << " runs, smallest gap "
            << to_ms(min_gap(starts)) << " ms\n";
  RecordProperty("runs", static_cast<int>(starts.size()));
}

TEST_F(CronTest, ThreeProcessesRunEachIntervalAtMostOnce) {
  constexpr int kInterval = 400;
  constexpr int kLease = 300;
  constexpr int kIntervals = 10;
  const std::string out = server_->dir() + "/" + name_ + ".runs";
  std::vector<pid_t> workers;
  for (int p = 0; p < 3; ++p) {
    std::vector<std::string> args = {testing::build_paths::test_worker,
                                     "cron",
                                     server_->unix_url(),
                                     name_,
                                     std::to_string(kInterval),
                                     std::to_string(kLease),
                                     std::to_string(kInterval * kIntervals),
                                     out};
    std::vector<char*> argv;
    for (auto& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    workers.push_back(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(90 * (p + 1)));  // staggered starts
  }
  for (pid_t pid : workers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::vector<long long> starts_ns;
  std::ifstream in(out);
  for (long long ns; in >> ns;)
    starts_ns.push_back(ns);
  std::sort(starts_ns.begin(), starts_ns.end());
  ASSERT_GE(starts_ns.size(), static_cast<std::size_t>(kIntervals - 2));
  long long smallest = std::numeric_limits<long long>::max();
  for (std::size_t i = 1; i < starts_ns.size(); ++i)
    smallest = std::min(smallest, starts_ns[i] - starts_ns[i - 1]);
  EXPECT_GE(smallest, (kLease - 50) * 1'000'000LL) << "two processes ran the same interval";
  std::cout << "3 processes, " << kIntervals << " intervals: " << starts_ns.size()
            << " runs, smallest gap " << smallest / 1'000'000 << " ms\n";
}

TEST_F(CronTest, AlignedModeRunsEachServerTimeSlotAtMostOnce) {
  constexpr auto kInterval = 300ms;
  std::mutex mutex;
  std::vector<long long> slots;
  const auto end = Clock::now() + kInterval * 10;
  std::vector<std::thread> replicas;
  for (int r = 0; r < 3; ++r) {
    replicas.emplace_back([&, r] {
      std::this_thread::sleep_for(std::chrono::milliseconds(70 * r));
      Client redis(server_->unix_url());
      Scheduler scheduler;
      scheduler.add(name_, AtLeast{kInterval / 3},  // ticks often: the slot decides
                    once_per_interval(redis, name_, kInterval,
                                      [&](const Tick& tick) {
                                        // The slot the lease was granted for: the run itself
                                        // may start in the next slot on a slow machine.
                                        ASSERT_TRUE(tick.slot.has_value());
                                        std::lock_guard lock(mutex);
                                        slots.push_back(*tick.slot);
                                      },
                                      {.aligned = true}));
      auto running = scheduler.start();
      std::this_thread::sleep_until(end);
      running.shutdown();
    });
  }
  for (auto& replica : replicas)
    replica.join();
  std::sort(slots.begin(), slots.end());
  EXPECT_EQ(std::adjacent_find(slots.begin(), slots.end()), slots.end()) << "a slot ran twice";
  EXPECT_GE(slots.size(), 8u);
}

TEST_F(CronTest, TheThreeIntervalKindsHoldWithSlowAndFastJobs) {
  const auto run_for = [](Interval interval, Clock::duration job_time, Clock::duration total) {
    RunLog runs;
    std::atomic<int> in_progress{0};
    std::atomic<int> max_in_progress{0};
    Scheduler scheduler;
    scheduler.add("kind", interval, [&] {
      runs.record();
      const int now = ++in_progress;
      int seen = max_in_progress.load();
      while (now > seen && !max_in_progress.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(job_time);  // the job's work
      --in_progress;
    });
    auto running = scheduler.start();
    std::this_thread::sleep_for(total);  // let it run this long
    running.shutdown();
    return std::make_pair(runs.sorted(), max_in_progress.load());
  };
  // AtLeast, fast job: every 100 ms, never overlapping.
  auto [at_least_fast, overlap1] = run_for(AtLeast{100ms}, 10ms, 450ms);
  EXPECT_GE(min_gap(at_least_fast), 95ms);
  EXPECT_EQ(overlap1, 1);
  EXPECT_GE(at_least_fast.size(), 4u);
  // AtLeast, slow job: starts at least the job's length apart, never overlapping.
  auto [at_least_slow, overlap2] = run_for(AtLeast{50ms}, 120ms, 450ms);
  EXPECT_GE(min_gap(at_least_slow), 115ms);
  EXPECT_EQ(overlap2, 1);
  // AfterFinish: the gap is the job's length plus the interval.
  auto [after_finish, overlap3] = run_for(AfterFinish{100ms}, 60ms, 600ms);
  EXPECT_GE(min_gap(after_finish), 155ms);
  EXPECT_EQ(overlap3, 1);
  // AfterStart, slow job: runs overlap and keep a 100 ms rhythm.
  auto [after_start, overlap4] = run_for(AfterStart{100ms}, 250ms, 550ms);
  EXPECT_GE(overlap4, 2);
  EXPECT_GE(after_start.size(), 5u);
  EXPECT_LT(min_gap(after_start), 150ms);
}

TEST_F(CronTest, AFailingJobKeepsItsScheduleAndTheErrorIsLogged) {
  CapturedLog log;
  std::atomic<int> runs{0};
  Scheduler scheduler;
  scheduler.add("failing", AtLeast{50ms}, [&]() -> std::error_code {
    ++runs;
    return make_error_code(errc::server_error);
  });
  scheduler.add("throwing", AtLeast{50ms}, [&] { throw std::runtime_error("boom"); });
  auto running = scheduler.start();
  EXPECT_TRUE(eventually([&] { return runs >= 3 && log.count("'throwing'") >= 3; }));
  running.shutdown();
  EXPECT_GE(log.count("cron job 'failing' run 1 failed: Redis answered the command with an error"),
            1u);
  EXPECT_GE(log.count("cron job 'throwing' run 2 threw: boom"), 1u);
}

TEST_F(CronTest, ShutdownWaitsForTheRunInProgressAndNoRunStartsAfterIt) {
  std::atomic<bool> in_run{false};
  std::atomic<bool> finished{false};
  std::atomic<int> starts{0};
  Scheduler scheduler;
  scheduler.add("slow", AfterStart{20ms}, [&] {
    ++starts;
    in_run = true;
    std::this_thread::sleep_for(200ms);  // the job's work
    finished = true;
  });
  auto running = scheduler.start();
  ASSERT_TRUE(eventually([&] { return in_run.load(); }));
  running.shutdown();
  EXPECT_TRUE(finished.load()) << "shutdown returned while a run was in progress";
  const int after_shutdown = starts.load();
  std::this_thread::sleep_for(100ms);  // a wrong implementation would start more runs here
  EXPECT_EQ(starts.load(), after_shutdown);
}

TEST_F(CronTest, ALeaseNotShorterThanTheIntervalIsRefused) {
  Client redis(server_->unix_url());
  try {
    once_per_interval(redis, name_, 1s, [] {}, {.lease = 1s});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("must be shorter than its interval"), std::string::npos);
  }
  EXPECT_THROW(once_per_interval(redis, name_, 1s, [] {}, {.lease = 2s}), Error);
  EXPECT_NO_THROW(once_per_interval(redis, name_, 1s, [] {}));  // default: 90%
}

TEST_F(CronTest, ARunLongerThanTheLeaseKeepsItsLeaseWithWhileHeld) {
  constexpr auto kInterval = 800ms;
  Client a(server_->unix_url());
  Client b(server_->unix_url());
  RunLog runs;
  std::atomic<bool> long_run_over{false};
  Clock::time_point long_run_end;
  Scheduler first;
  first.add(name_, AtLeast{kInterval},
            once_per_interval(a, name_, kInterval,
                              [&](const Tick& tick) {
                                runs.record();
                                if (tick.run == 1) {
                                  // Far longer than the 400 ms lease.
                                  std::this_thread::sleep_for(1400ms);
                                  long_run_end = Clock::now();
                                  long_run_over = true;
                                }
                              },
                              {.lease = 400ms, .extend_while_running = true}));
  auto running_a = first.start();
  ASSERT_TRUE(eventually([&] { return runs.sorted().size() == 1; }));
  Scheduler second;
  second.add(name_, AtLeast{50ms},  // ticks often: would run at once if the lease lapsed
             once_per_interval(b, name_, kInterval, [&] { runs.record(); },
                               {.lease = 400ms, .extend_while_running = true}));
  auto running_b = second.start();
  ASSERT_TRUE(eventually([&] { return long_run_over.load(); }));
  ASSERT_TRUE(eventually([&] { return runs.sorted().size() >= 2; }));
  running_a.shutdown();
  running_b.shutdown();
  const auto starts = runs.sorted();
  EXPECT_GE(starts[1], long_run_end) << "another replica ran while the long run held the lease";
}

// The server's current time in milliseconds since the Unix epoch, by its TIME.
long long server_time_ms(const RedisServer& server) {
  const Reply time = server.command({"TIME"});
  return std::stoll(time.elements.at(0).str) * 1000 + std::stoll(time.elements.at(1).str) / 1000;
}

TEST_F(CronTest, AlignedSlotsAreNotClaimedAgainAfterTheServerClockStepsBack) {
  constexpr auto kInterval = 1s;
  constexpr auto kStepBack = 4s;
  RedisServer server(RedisServer::Options{.extra_args = {}, .fake_clock = true});
  Client a(server.unix_url());
  Client b(server.unix_url());
  IntervalLease replica_a(a, name_, kInterval, {.aligned = true});
  IntervalLease replica_b(b, name_, kInterval, {.aligned = true});
  std::vector<std::int64_t> granted;  // every slot either replica was granted, in order
  const auto claim_round = [&] {
    for (IntervalLease* replica : {&replica_a, &replica_b}) {
      if (auto claim = replica->claim()) {
        EXPECT_TRUE(claim->slot.has_value());
        granted.push_back(claim->slot.value_or(-1));
      }
    }
  };
  // Polls: each round is one claim per replica, 20 ms apart.
  ASSERT_TRUE(eventually(
      [&] {
        claim_round();
        return granted.size() >= 4;
      },
      20s, 20ms));
  const std::int64_t highest = *std::max_element(granted.begin(), granted.end());
  const std::size_t before_step = granted.size();

  const long long before = server_time_ms(server);
  server.set_clock_offset(-kStepBack);
  ASSERT_LT(server_time_ms(server), before) << "the server's clock did not step back";
  // The step took the server back over slots already claimed.
  EXPECT_LT(server_time_ms(server) / std::chrono::milliseconds(kInterval).count(), highest);

  // Claims resume once the server's clock passes the highest slot claimed.
  const auto resumed = [&] {
    return std::any_of(granted.begin() + static_cast<std::ptrdiff_t>(before_step), granted.end(),
                       [&](std::int64_t slot) { return slot > highest; });
  };
  EXPECT_TRUE(eventually(
      [&] {
        claim_round();
        return resumed();
      },
      20s, 20ms));
  for (std::size_t i = before_step; i < granted.size(); ++i)
    EXPECT_GT(granted[i], highest) << "slot " << granted[i] << " claimed after the step back";
  std::vector<std::int64_t> sorted = granted;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
      << "a slot was claimed twice: " << ::testing::PrintToString(granted);
  std::cout << "slots granted, in order (the clock stepped back after the first " << before_step
            << "): " << ::testing::PrintToString(granted) << "\n";
}

TEST_F(CronTest, AGivenBackAlignedSlotCanBeClaimedAgainUntilALaterSlotIsClaimed) {
  constexpr auto kInterval = 10s;
  RedisServer server(RedisServer::Options{.extra_args = {}, .fake_clock = true});
  Client a(server.unix_url());
  Client b(server.unix_url());
  const auto server_slot = [&] {
    return server_time_ms(server) / std::chrono::milliseconds(kInterval).count();
  };
  // The first steps must fall in one slot: if the real clock crosses into the next one meanwhile,
  // they are tried again under another name.
  for (int attempt = 1;; ++attempt) {
    const std::string name = name_ + "." + std::to_string(attempt);
    IntervalLease replica_a(a, name, kInterval, {.aligned = true});
    IntervalLease replica_b(b, name, kInterval, {.aligned = true});
    const long long slot_before = server_slot();
    auto first = replica_a.claim();
    auto while_held = replica_b.claim();
    const bool given_back = first && a.process(first->token.release());
    auto again = replica_b.claim();
    auto after_that = replica_a.claim();
    if (server_slot() != slot_before && attempt < 3)
      continue;
    ASSERT_TRUE(first);
    EXPECT_FALSE(while_held) << "two replicas were granted one slot";
    EXPECT_TRUE(given_back);
    ASSERT_TRUE(again) << "a slot given back was not granted to another replica";
    EXPECT_EQ(again->slot, first->slot);
    EXPECT_FALSE(after_that) << "a slot was granted again after it was claimed back";

    // A later slot is claimed: the earlier one can no longer be given back.
    server.set_clock_offset(kInterval);
    auto later = replica_a.claim();
    ASSERT_TRUE(later);
    EXPECT_GT(later->slot, first->slot);
    EXPECT_FALSE(b.process(again->token.release())) << "a slot was given back after a later one";
    server.set_clock_offset(0ms);
    EXPECT_FALSE(replica_b.claim()) << "an earlier slot was granted after a later one";
    break;
  }
}

}  // namespace
}  // namespace leasehold::cron
