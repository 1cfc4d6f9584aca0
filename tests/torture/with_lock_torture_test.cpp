// Torture: many processes and threads with with_lock on one and on many names, and critical
// sections longer than the TTL. Each section does a non-atomic read-sleep-write of a counter in
// Redis: without mutual exclusion, increments get lost.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis_server.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

struct WithLockScenario {
  std::string id;
  int processes = 8;
  int threads = 2;
  int names = 1;
  std::chrono::milliseconds duration;
  std::chrono::milliseconds ttl;
  std::chrono::microseconds hold;
  std::chrono::milliseconds retry;
};

void run(const WithLockScenario& scenario) {
  RedisServer server;
  HistoryDir dir(scenario.id);
  const std::string names = name_list(scenario.names);
  std::vector<Worker> workers;
  for (int p = 0; p < scenario.processes; ++p) {
    workers.emplace_back(worker_args("with-lock", server.unix_url(),
                                     dir.file("worker-" + std::to_string(p)),
                                     {{"names", names},
                                      {"threads", std::to_string(scenario.threads)},
                                      {"duration-ms", std::to_string(scenario.duration.count())},
                                      {"ttl-ms", std::to_string(scenario.ttl.count())},
                                      {"hold-us", std::to_string(scenario.hold.count())},
                                      {"retry-ms", std::to_string(scenario.retry.count())},
                                      // every name is some thread's first: each gets locked
                                      {"first-name", std::to_string(p * scenario.threads)}}));
  }
  for (auto& worker : workers) {
    ASSERT_TRUE(worker.wait(scenario.duration + 120s)) << "a worker did not finish";
    EXPECT_EQ(worker.exit_code(), 0);
  }

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.section_overlaps.empty()) << report.summary();
  EXPECT_TRUE(report.counter_errors.empty()) << report.summary();
  EXPECT_EQ(report.losses, 0u) << report.summary();
  EXPECT_TRUE(report.clean()) << report.summary();
  long long counted = 0;
  for (int n = 0; n < scenario.names; ++n) {
    const std::string name = "n" + std::to_string(n);
    const Reply value = server.command({"GET", "torture:counter:" + name});
    const long long final_value = value.is_nil() ? 0 : std::stoll(value.str);
    counted += final_value;
    EXPECT_GT(final_value, 0) << name << " was never locked";
    const auto problems = check_counter_final(events, name, final_value);
    EXPECT_TRUE(problems.empty()) << problems.front();
  }
  EXPECT_EQ(static_cast<std::size_t>(counted), report.counter_writes);
  report_figures(scenario.id,
                 {{"processes", std::to_string(scenario.processes)},
                  {"threads", std::to_string(scenario.threads)},
                  {"names", std::to_string(scenario.names)},
                  {"seconds", seconds_figure(scenario.duration)},
                  {"sections", std::to_string(report.valid_sections)},
                  {"overlaps", std::to_string(report.section_overlaps.size())},
                  {"losses", std::to_string(report.losses)},
                  {"counter_total", std::to_string(counted)},
                  {"counter_exact", counted == static_cast<long long>(report.counter_writes) &&
                                            report.counter_errors.empty()
                                        ? "yes"
                                        : "no"}});
}

TEST(TortureWithLock, EightProcessesOfTwoThreadsOnOneName) {
  run({.id = "with_lock_1_name",
       .names = 1,
       .duration = scaled(30s, 3s),
       .ttl = 2s,
       .hold = 500us,
       .retry = 2ms});
}

TEST(TortureWithLock, EightProcessesOfTwoThreadsOnSixteenNames) {
  run({.id = "with_lock_16_names",
       .names = 16,
       .duration = scaled(30s, 3s),
       .ttl = 2s,
       .hold = 500us,
       .retry = 2ms});
}

TEST(TortureWithLock, SectionsLongerThanTheTtlAreExtendedNeverLost) {
  // Each section lasts three TTLs: it holds only because the keep-alive extends the lease. The TTL
  // leaves the keep-alive two thirds of it (333 ms) to get an extension through: this machine
  // stalls every process at once for 100 ms and more when it is loaded.
  run({.id = "with_lock_longer_than_ttl",
       .processes = 4,
       .threads = 2,
       .names = 4,
       .duration = scaled(30s, 5s),
       .ttl = 500ms,
       .hold = 1500ms,
       .retry = 5ms});
}

}  // namespace
}  // namespace leasehold::testing::torture
