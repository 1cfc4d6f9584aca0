// Torture: a cron job on five replica processes, one of them killed in the middle of a run and
// another stopped (SIGSTOP) in the middle of a run for two intervals.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

// A running replica in the middle of a run (its last section began and has not ended), if any.
std::optional<std::size_t> replica_in_a_run(const std::vector<std::string>& files,
                                            const std::vector<Worker>& replicas) {
  for (std::size_t r = 0; r < files.size(); ++r) {
    if (!replicas[r].running())
      continue;
    const auto events = read_history_file(files[r]);
    for (auto event = events.rbegin(); event != events.rend(); ++event) {
      if (event->kind == EventKind::cs_end)
        break;
      if (event->kind == EventKind::cs_begin)
        return r;
    }
  }
  return std::nullopt;
}

TEST(TortureCron, FiveReplicasOneKilledAndOnePausedMidRunRunAtMostOncePerInterval) {
  constexpr auto kInterval = 400ms;
  constexpr auto kLease = 300ms;
  constexpr auto kRun = 100ms;
  const auto duration = scaled(30s, 6s);
  RedisServer server;
  HistoryDir dir("cron");
  const Recorder faults(dir.file("test"));
  std::vector<std::string> files;
  std::vector<Worker> replicas;
  std::mt19937 random(std::random_device{}());
  for (int r = 0; r < 5; ++r) {
    files.push_back(dir.file("replica-" + std::to_string(r)));
    replicas.emplace_back(worker_args("cron", server.unix_url(), files.back(),
                                      {{"names", "report"},
                                       {"interval-ms", std::to_string(kInterval.count())},
                                       {"lease-ms", std::to_string(kLease.count())},
                                       {"run-ms", std::to_string(kRun.count())},
                                       {"duration-ms", std::to_string(duration.count())}}));
    // Replicas start at their own moments.
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 400)(random)));
  }
  const auto start = std::chrono::steady_clock::now();
  // Waits for some replica to be in the middle of a run, polling.
  const auto mid_run = [&](std::chrono::milliseconds timeout) -> std::optional<std::size_t> {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (const auto r = replica_in_a_run(files, replicas))
        return r;
      std::this_thread::sleep_for(2ms);  // polling against a deadline
    }
    return std::nullopt;
  };

  std::this_thread::sleep_until(start + duration / 3);
  const auto killed = mid_run(5s);
  ASSERT_TRUE(killed.has_value()) << "no replica ever ran";
  faults.record({.kind = EventKind::fault, .target = replicas[*killed].pid(), .detail = "sigkill"});
  replicas[*killed].kill();

  std::this_thread::sleep_until(start + 2 * duration / 3);
  const auto paused = mid_run(5s);
  ASSERT_TRUE(paused.has_value()) << "no replica ran after the kill";
  faults.record({.kind = EventKind::fault, .target = replicas[*paused].pid(), .detail = "sigstop"});
  replicas[*paused].signal(SIGSTOP);
  std::this_thread::sleep_for(2 * kInterval);  // the fault: two intervals stopped
  faults.record({.kind = EventKind::fault, .target = replicas[*paused].pid(), .detail = "sigcont"});
  replicas[*paused].signal(SIGCONT);
  for (std::size_t r = 0; r < replicas.size(); ++r) {
    if (r == *killed)
      continue;
    ASSERT_TRUE(replicas[r].wait(duration + 30s));
    EXPECT_EQ(replicas[r].exit_code(), 0);
  }

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  // No two runs' leases overlap: a run's grant comes after the previous run's lease expired.
  EXPECT_TRUE(report.double_grants.empty()) << report.summary();
  EXPECT_TRUE(report.section_overlaps.empty()) << report.summary();
  EXPECT_TRUE(report.clean()) << report.summary();
  // Runs: the grants, with the claim that preceded each. The server grants a run's lease only
  // after the previous run's lease expired, at least a lease later; the later grant's answer minus
  // the earlier claim bounds the distance between the two grants from above, so it must reach the
  // lease too (less 2 ms: Redis counts expiry in whole milliseconds of its own clock).
  std::map<std::pair<int, std::uint64_t>, std::int64_t> claims;
  struct Run {
    std::int64_t claimed;
    std::int64_t granted;
  };
  std::vector<Run> runs;
  for (const auto& event : events) {
    if (event.kind == EventKind::acquire_call)
      claims[{event.pid, event.lease}] = event.t;
    if (event.kind == EventKind::acquire_ok)
      runs.push_back({claims.at({event.pid, event.lease}), event.t});
  }
  std::int64_t smallest_gap = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 1; i < runs.size(); ++i)
    smallest_gap = std::min(smallest_gap, runs[i].granted - runs[i - 1].claimed);
  const auto lease_ns = std::chrono::nanoseconds(kLease).count();
  EXPECT_GE(smallest_gap, lease_ns - 2'000'000) << "two runs closer than the lease";
  ASSERT_GE(runs.size(), 2u);
  // At most one run per lease, and nearly one per interval (the stop and the kill cost some).
  const std::int64_t span_ns = runs.back().granted - runs.front().claimed;
  EXPECT_LE(static_cast<std::int64_t>(runs.size()), span_ns / lease_ns + 1);
  EXPECT_GE(static_cast<std::int64_t>(runs.size()),
            span_ns / std::chrono::nanoseconds(kInterval).count() - 6);
  report_figures("cron",
                 {{"replicas", "5"},
                  {"seconds", seconds_figure(duration)},
                  {"interval_ms", std::to_string(kInterval.count())},
                  {"lease_ms", std::to_string(kLease.count())},
                  {"runs", std::to_string(runs.size())},
                  {"smallest_gap_bound", ms_figure(static_cast<double>(smallest_gap) / 1e6)},
                  {"double_grants", std::to_string(report.double_grants.size())},
                  {"killed_mid_run", "1"},
                  {"stopped_mid_run", "1"}});
}

}  // namespace
}  // namespace leasehold::testing::torture
