// Torture: Sentinel fails the master over under the holders. Ten holders (five processes of two
// threads) take five names through a redis-sentinel:// URL with with_lock, which waits in turn
// and extends in the background, while the test asks the sentinels for failover after failover.
// With every replica acknowledging each grant (replica_acks=2), no two sections overlap, no lease
// is reported held past its deadline, and every process works again after the last failover.
// With fewer acknowledgements a grant may die with the old master: those runs report what a
// failover cost (docs/reliability.md) and hold only to the client-side guarantees.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "redis_sentinel.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

void failover_scenario(int replica_acks) {
  constexpr int kProcesses = 5;
  const std::string id = "sentinel_failover_acks" + std::to_string(replica_acks);
  // The failovers' pace; each failover itself takes a few seconds more.
  const auto pace = scaled(5s, 1s);
  const int failovers = scaled(10, 2);
  RedisSentinelGroup group;
  HistoryDir dir(id);
  const Recorder faults(dir.file("test"));
  const std::string url =
      group.url() + "?replica_acks=" + std::to_string(replica_acks) + "&replica_ack_timeout=200ms";
  const std::string stop_file = dir.path() + "/stop";
  std::vector<Worker> workers;
  for (int p = 0; p < kProcesses; ++p) {
    workers.emplace_back(worker_args("with-lock", url, dir.file("worker-" + std::to_string(p)),
                                     {{"names", name_list(5)},
                                      {"threads", "2"},
                                      {"first-name", std::to_string(2 * p)},
                                      {"duration-ms", "600000"},
                                      {"stop-file", stop_file},
                                      {"ttl-ms", "1000"},
                                      {"hold-us", "20000"},
                                      {"retry-ms", "5"}}));
  }
  const std::int64_t start = monotonic_ns();
  std::int64_t last_failover = 0;
  for (int f = 0; f < failovers; ++f) {
    std::this_thread::sleep_for(pace);
    faults.record({.kind = EventKind::fault, .detail = "failover"});
    group.failover(15s);
    last_failover = monotonic_ns();
    faults.record({.kind = EventKind::fault, .detail = "failover_done"});
  }
  // Every process is served again after the last failover, the waiters too; then they stop.
  for (int p = 0; p < kProcesses; ++p) {
    const bool after = wait_for_history(
        dir.file("worker-" + std::to_string(p)),
        [&](const std::vector<Event>& events) {
          return std::any_of(events.begin(), events.end(), [&](const Event& e) {
            return e.kind == EventKind::cs_end && e.valid && e.t > last_failover;
          });
        },
        20s);
    EXPECT_TRUE(after) << "worker " << p << " never worked again after the last failover";
  }
  const auto duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::nanoseconds(monotonic_ns() - start));
  std::ofstream{stop_file} << "stop\n";
  for (auto& worker : workers) {
    ASSERT_TRUE(worker.wait(30s));
    EXPECT_EQ(worker.exit_code(), 0);
  }

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  // Whatever the acknowledgements: the client never says a lease is held past its deadline, and
  // never counts a grant that came after its own deadline.
  EXPECT_TRUE(report.false_held.empty() && report.late_grants.empty()) << report.summary();
  if (replica_acks >= 2) {
    EXPECT_TRUE(report.section_overlaps.empty() && report.double_grants.empty())
        << report.summary();
  }
  report_figures(id, {{"failovers", std::to_string(failovers)},
                      {"seconds", seconds_figure(duration)},
                      {"replica_acks", std::to_string(replica_acks)},
                      {"sections", std::to_string(report.valid_sections)},
                      {"losses", std::to_string(report.losses)},
                      {"overlaps", std::to_string(report.section_overlaps.size())},
                      {"double_grants", std::to_string(report.double_grants.size())}});
}

TEST(TortureSentinel, FailoversWithEveryReplicaAcknowledgingNeverOverlap) {
  failover_scenario(2);
}

TEST(TortureSentinel, FailoversWithOneAcknowledgementReportWhatTheyCost) {
  failover_scenario(1);
}

TEST(TortureSentinel, FailoversWithoutAcknowledgementsReportWhatTheyCost) {
  failover_scenario(0);
}

}  // namespace
}  // namespace leasehold::testing::torture
