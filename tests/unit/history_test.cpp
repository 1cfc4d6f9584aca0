// The history recorder (history.hpp): an event survives its line, std::chrono::steady_clock is
// the recorder's CLOCK_MONOTONIC, and threads append whole lines that the reader puts in time
// order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "history.hpp"

namespace leasehold::testing {
namespace {

TEST(HistoryRecorder, EventsSurviveTheRoundTripThroughALine) {
  const Event event{.t = 123,
                    .pid = 4,
                    .tid = 5,
                    .kind = EventKind::fence,
                    .name = "x:y",
                    .lease = 6,
                    .mode = 'r',
                    .deadline = 789,
                    .valid = true,
                    .value = -3,
                    .read = 8,
                    .ok = true,
                    .start = 100,
                    .target = 11,
                    .detail = "connection_lost"};
  const auto parsed = parse_event(event.to_line());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->to_line(), event.to_line());
  const Event permit{.t = 1, .kind = EventKind::occupancy, .name = "s", .mode = 'p', .value = 3};
  const auto parsed_permit = parse_event(permit.to_line());
  ASSERT_TRUE(parsed_permit.has_value());
  EXPECT_EQ(parsed_permit->mode, 'p');
  EXPECT_EQ(parsed_permit->kind, EventKind::occupancy);
  EXPECT_FALSE(parse_event("t=1 kind=loss mode=x").has_value());  // no such mode
  EXPECT_FALSE(parse_event("t=12 pid=1").has_value());            // no kind
  EXPECT_FALSE(parse_event("t=1x pid=1 kind=loss").has_value());  // a torn number
  EXPECT_FALSE(parse_event("t=1 kind=nonsense").has_value());
  for (std::size_t k = 0; k <= static_cast<std::size_t>(EventKind::fault); ++k) {
    const auto kind = static_cast<EventKind>(k);
    EXPECT_EQ(event_kind_from_string(to_string(kind)), kind) << to_string(kind);
  }
}

TEST(HistoryRecorder, SteadyClockIsClockMonotonic) {
  // Lease deadlines come from std::chrono::steady_clock; the history compares them with
  // CLOCK_MONOTONIC times. Read in between, each must lie between the other's readings.
  for (int i = 0; i < 100; ++i) {
    const std::int64_t before = monotonic_ns();
    const std::int64_t steady = to_monotonic_ns(std::chrono::steady_clock::now());
    const std::int64_t after = monotonic_ns();
    ASSERT_LE(before, steady);
    ASSERT_LE(steady, after);
  }
}

TEST(HistoryRecorder, ThreadsAppendWholeLinesAndTheReaderOrdersThemByTime) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("leasehold-history-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    Recorder first((dir / "a.events").string());
    Recorder second((dir / "b.events").string());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        const Recorder& recorder = t % 2 ? first : second;
        for (int i = 0; i < 500; ++i)
          recorder.record({.kind = EventKind::cs_begin, .name = std::string(50 + t, 'n')});
      });
    }
    for (auto& thread : threads)
      thread.join();
    EXPECT_EQ(first.next_lease(), 1u);
    EXPECT_EQ(first.next_lease(), 2u);
  }
  std::ofstream(dir / "ignored.txt") << "not a history\n";
  // A torn last line (the writer was killed mid-write) is dropped, not read with a cut number.
  std::ofstream(dir / "torn.events")
      << "t=5 pid=1 tid=1 kind=acquire_ok name=a lease=1 deadline=12";
  const auto events = read_history(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(events.size(), 2000u);
  EXPECT_TRUE(std::is_sorted(events.begin(), events.end(),
                             [](const Event& a, const Event& b) { return a.t < b.t; }));
  for (const auto& event : events) {
    EXPECT_EQ(event.pid, ::getpid());
    EXPECT_GE(event.name.size(), 50u);
  }
}

}  // namespace
}  // namespace leasehold::testing
