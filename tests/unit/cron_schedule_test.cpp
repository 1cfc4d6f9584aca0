// The cron schedule as a pure state machine, driven by a fake clock.
#include <gtest/gtest.h>

#include "leasehold/cron.hpp"

namespace leasehold::cron {
namespace {

using namespace std::chrono_literals;

// A fake clock: time starts at t0 and moves only when the test says so.
struct FakeClock {
  Clock::time_point now{Clock::duration(1'000'000'000'000)};
  void advance(Clock::duration d) { now += d; }
  Clock::duration since(Clock::time_point start) const { return now - start; }
};

// Runs a job of fixed duration on `schedule` until `until`, starting each run as soon as it is
// due. Returns the start offsets (from t0) and the maximum number of runs in progress at once.
struct Simulation {
  std::vector<Clock::duration> starts;
  int max_running = 0;
};

Simulation simulate(Interval interval, Clock::duration run_time, Clock::duration until,
                    Clock::duration late_by = {}) {
  FakeClock clock;
  const auto t0 = clock.now;
  Schedule schedule(interval, t0);
  std::vector<Clock::time_point> ends;  // of runs in progress
  Simulation result;
  while (clock.now - t0 < until) {
    // Finish what ended by now.
    for (auto it = ends.begin(); it != ends.end();) {
      if (*it <= clock.now) {
        schedule.finish(*it);
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
    if (schedule.can_start(clock.now)) {
      schedule.start(clock.now);
      result.starts.push_back(clock.now - t0);
      ends.push_back(clock.now + run_time);
      result.max_running = std::max(result.max_running, schedule.running());
      clock.advance(late_by);  // a scheduler that starts runs a little late
      continue;
    }
    clock.advance(1ms);
  }
  return result;
}

std::vector<Clock::duration> ms(std::initializer_list<int> values) {
  std::vector<Clock::duration> out;
  for (int v : values)
    out.push_back(std::chrono::milliseconds(v));
  return out;
}

TEST(CronSchedule, TheFirstRunIsAtStartup) {
  FakeClock clock;
  Schedule schedule(AtLeast{1h}, clock.now);
  EXPECT_TRUE(schedule.can_start(clock.now));
  const Tick tick = schedule.start(clock.now);
  EXPECT_EQ(tick.run, 1u);
  EXPECT_EQ(tick.scheduled, clock.now);
}

TEST(CronSchedule, AtLeastWithFastRunsStartsEveryInterval) {
  const auto sim = simulate(AtLeast{100ms}, 10ms, 350ms);
  EXPECT_EQ(sim.starts, ms({0, 100, 200, 300}));
  EXPECT_EQ(sim.max_running, 1);
}

TEST(CronSchedule, AtLeastWithSlowRunsNeverOverlapsAndWaitsForTheRunToEnd) {
  const auto sim = simulate(AtLeast{100ms}, 150ms, 500ms);
  EXPECT_EQ(sim.starts, ms({0, 150, 300, 450}));
  EXPECT_EQ(sim.max_running, 1);
}

TEST(CronSchedule, AfterFinishCountsFromTheEndOfEachRun) {
  const auto fast = simulate(AfterFinish{100ms}, 30ms, 400ms);
  EXPECT_EQ(fast.starts, ms({0, 130, 260, 390}));
  const auto slow = simulate(AfterFinish{100ms}, 150ms, 600ms);
  EXPECT_EQ(slow.starts, ms({0, 250, 500}));
  EXPECT_EQ(slow.max_running, 1);
}

TEST(CronSchedule, AfterStartKeepsItsRhythmAndSlowRunsOverlap) {
  const auto fast = simulate(AfterStart{100ms}, 10ms, 350ms);
  EXPECT_EQ(fast.starts, ms({0, 100, 200, 300}));
  const auto slow = simulate(AfterStart{100ms}, 250ms, 350ms);
  EXPECT_EQ(slow.starts, ms({0, 100, 200, 300}));
  EXPECT_EQ(slow.max_running, 3);
}

TEST(CronSchedule, AfterStartRunsMayFireSlightlyLessThanTheIntervalApart) {
  // The scheduler starts each run 7 ms late; the next is still due `every` after the scheduled
  // start, so the gap between actual starts is 100 ms, not 107.
  FakeClock clock;
  Schedule schedule(AfterStart{100ms}, clock.now);
  const auto t0 = clock.now;
  clock.advance(7ms);
  const Tick first = schedule.start(clock.now);
  EXPECT_EQ(first.scheduled, t0);
  EXPECT_EQ(schedule.due(), t0 + 100ms);
  clock.now = t0 + 100ms;
  const Tick second = schedule.start(clock.now);
  EXPECT_EQ(second.run, 2u);
  EXPECT_EQ(second.scheduled, t0 + 100ms);
  EXPECT_LT(clock.now - (t0 + 7ms), 100ms);
}

TEST(CronSchedule, AfterAStallAfterStartCatchesUpOnceWithoutABurst) {
  FakeClock clock;
  Schedule schedule(AfterStart{100ms}, clock.now);
  schedule.start(clock.now);
  clock.advance(1s);  // the process was stopped for ten intervals
  ASSERT_TRUE(schedule.can_start(clock.now));
  schedule.start(clock.now);
  EXPECT_FALSE(schedule.can_start(clock.now)) << "a burst of missed runs";
}

TEST(CronSchedule, AnIntervalMustBePositive) {
  EXPECT_THROW(Schedule(AtLeast{0ms}, Clock::now()), Error);
  Scheduler scheduler;
  EXPECT_THROW(scheduler.add("x", AfterStart{-1ms}, [] {}), Error);
}

}  // namespace
}  // namespace leasehold::cron
