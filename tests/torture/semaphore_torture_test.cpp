// Torture: many processes and threads share a Semaphore's permits, some waiting in turn and some
// trying, while others are killed at random points. The history checker holds the library to
// "never more live permits than the name has", and a counter of holders kept at Redis (INCR at a
// section's start, DECR at its end) to the same bound from the outside. Holders must also really
// share: a run in which no more than one section was ever open proves nothing about permits.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <leasehold/leasehold.hpp>

#include "eventually.hpp"
#include "redis_server.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

std::int64_t ns(std::chrono::nanoseconds duration) {
  return duration.count();
}

std::vector<std::pair<std::string, std::string>> worker_options(
    int permits, int threads, std::chrono::milliseconds ttl, const std::string& cs_ms, bool waits,
    std::chrono::milliseconds duration) {
  std::vector<std::pair<std::string, std::string>> options = {
      {"names", "n0"},
      {"permits", std::to_string(permits)},
      {"threads", std::to_string(threads)},
      {"ttl-ms", std::to_string(ttl.count())},
      {"cs-ms", cs_ms},
      {"retry-ms", "2"},
      {"duration-ms", std::to_string(duration.count())}};
  if (waits)
    options.push_back({"wait-ms", "2000"});
  return options;
}

// Eight processes of two threads on three permits of one name, half of them waiting in turn and
// half trying every 2 ms. Nobody is lost, the count at Redis never passes three, all three
// permits are in use at some moment, and nothing is left behind.
TEST(TortureSemaphore, EightProcessesOfTwoThreadsShareThreePermitsAndNeverExceedThem) {
  constexpr int kPermits = 3;
  const auto duration = scaled(20s, 3s);
  RedisServer server;
  HistoryDir dir("semaphore");
  std::vector<Worker> workers;
  for (int p = 0; p < 8; ++p) {
    auto options = worker_options(kPermits, 2, 2s, "1:5", p % 2 == 0, duration);
    options.push_back({"occupancy", ""});
    workers.emplace_back(worker_args("semaphore", server.unix_url(),
                                     dir.file("worker-" + std::to_string(p)), options));
  }
  for (auto& worker : workers) {
    ASSERT_TRUE(worker.wait(duration + 120s)) << "a worker did not finish";
    EXPECT_EQ(worker.exit_code(), 0);
  }

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_EQ(report.losses, 0u) << report.summary();
  EXPECT_EQ(report.permit_peak, static_cast<std::size_t>(kPermits))
      << "the permits were never all in use at once: sharing went untested\n"
      << report.summary();
  EXPECT_GT(report.occupancy_checks, 0u) << report.summary();
  // Both ways of acquiring took part: the even-numbered processes wait, the others try.
  std::size_t waited = 0;
  std::size_t tried = 0;
  for (const auto& event : events) {
    if (event.kind != EventKind::acquire_ok)
      continue;
    const auto at = std::find_if(workers.begin(), workers.end(),
                                 [&](const Worker& w) { return w.pid() == event.pid; });
    ++((at - workers.begin()) % 2 == 0 ? waited : tried);
  }
  EXPECT_GT(waited, 0u);
  EXPECT_GT(tried, 0u);
  EXPECT_EQ(server.command({"GET", "torture:inside:n0"}).str, "0")
      << "a section did not count itself out";
  EXPECT_TRUE(server.command({"KEYS", "torture:Semaphore:*:h"}).elements.empty())
      << "permits outlived their holders' releases";
  report_figures("semaphore", {{"processes", "8"},
                               {"threads", "2"},
                               {"permits", std::to_string(kPermits)},
                               {"seconds", seconds_figure(duration)},
                               {"grants_waiting", std::to_string(waited)},
                               {"grants_trying", std::to_string(tried)},
                               {"valid_sections", std::to_string(report.valid_sections)},
                               {"permit_peak", std::to_string(report.permit_peak)},
                               {"occupancy_checks", std::to_string(report.occupancy_checks)},
                               {"over_capacity", std::to_string(report.double_grants.size() +
                                                                report.section_overlaps.size())},
                               {"losses", std::to_string(report.losses)}});
}

// Holders are killed at random points (waiting, acquiring, holding, extending, releasing) and
// replaced. A killed holder's permit comes back after its TTL and never earlier: once the last
// worker is killed, a probe takes all the permits within TTL + a margin, and the checker, which
// counts each dead holder's lease live until its deadline, finds no moment with more live
// permits than the name has. No key is left without a TTL.
TEST(TortureSemaphore, HoldersKilledAtRandomPointsGiveTheirPermitsBackAfterTheirTtl) {
  constexpr int kPermits = 2;
  constexpr auto kTtl = 500ms;
  constexpr auto kMargin = 400ms;  // scheduling on a loaded 2-core machine, a reply in flight
  const int kills = scaled(150, 25);
  RedisServer server;
  HistoryDir dir("semaphore_sigkill");
  const Recorder faults(dir.file("test"));
  int spawned = 0;
  const auto spawn = [&] {
    ++spawned;
    return Worker(worker_args(
        "semaphore", server.unix_url(), dir.file("worker-" + std::to_string(spawned)),
        worker_options(kPermits, 2, kTtl, "0:1000", spawned % 2 == 0, std::chrono::hours(1))));
  };
  std::vector<Worker> workers;
  for (int w = 0; w < 4; ++w)
    workers.push_back(spawn());
  // The holders share the permits before the kills begin: on a loaded machine, sections rarely
  // end between kills, and the run would otherwise show no sharing at all.
  const bool shared = eventually(
      [&] { return check_history(read_history(dir.path())).permit_peak >= 2; }, 20s, 20ms);
  ASSERT_TRUE(shared) << "the holders never shared the permits";
  kill_at_random_points(workers, kills, faults, spawn);
  // The last kill hits while every permit is held with time left, so that each must wait out its
  // holder's TTL before it comes back.
  const std::string live_permits =
      "local t = redis.call('TIME') "
      "return redis.call('ZCOUNT', KEYS[1], '(' .. (t[1] * 1000 + math.floor(t[2] / 1000)), "
      "'+inf')";
  const bool all_held = eventually(
      [&] {
        return server.command({"EVAL", live_permits, "1", "torture:Semaphore:{torture:n0}:h"})
                   .integer == kPermits;
      },
      10s, 1ms);
  for (auto& worker : workers) {
    faults.record({.kind = EventKind::fault, .target = worker.pid(), .detail = "sigkill"});
    worker.kill();
  }
  const std::int64_t last_kill = monotonic_ns();
  const Reply without_ttl =
      server.command({"EVAL",
                      "local bad = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
                      "if redis.call('PTTL', k) < 0 then bad = bad + 1 end end return bad",
                      "0", "torture:Semaphore:*"});

  // The probe takes every permit as it comes back. Its grants enter the history as live for a
  // millisecond from their answer: less than they are, so the checker's verdict stays sound.
  Client redis(server.unix_url());
  const Semaphore<std::string> semaphore("torture", kPermits, 10s, "torture");
  std::vector<PermitToken<Semaphore<std::string>>> taken;
  const bool all_back = eventually(
      [&] {
        if (auto permit = redis.process(semaphore.try_acquire("n0"))) {
          const std::int64_t t = monotonic_ns();
          faults.record({.t = t,
                         .kind = EventKind::acquire_ok,
                         .name = "n0",
                         .lease = taken.size() + 1,
                         .mode = 'p',
                         .deadline = t + 1'000'000,
                         .value = kPermits});
          taken.push_back(std::move(*permit));
        }
        return taken.size() == static_cast<std::size_t>(kPermits);
      },
      kTtl + kMargin + 5s, 5ms);
  const std::int64_t all_back_after = monotonic_ns() - last_kill;
  for (const auto& permit : taken)
    redis.process(permit.release());

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_GE(report.permit_peak, 2u) << "no two holders ever shared\n" << report.summary();
  EXPECT_EQ(without_ttl.integer, 0) << "a semaphore key without a TTL";
  EXPECT_TRUE(all_held) << "the permits were never all held at once before the last kill";
  ASSERT_TRUE(all_back) << "the permits of killed holders never came back";
  EXPECT_LE(all_back_after, ns(kTtl + kMargin)) << "the permits came back late";
  report_figures("semaphore_sigkill",
                 {{"kills", std::to_string(kills)},
                  {"permits", std::to_string(kPermits)},
                  {"ttl_ms", std::to_string(kTtl.count())},
                  {"grants", std::to_string(report.leases)},
                  {"permit_peak", std::to_string(report.permit_peak)},
                  {"all_back_after", ms_figure(static_cast<double>(all_back_after) / 1e6)},
                  {"over_capacity",
                   std::to_string(report.double_grants.size() + report.section_overlaps.size())}});
}

}  // namespace
}  // namespace leasehold::testing::torture
