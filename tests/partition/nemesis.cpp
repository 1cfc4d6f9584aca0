#include "nemesis.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

namespace leasehold::testing::torture {

using namespace std::chrono_literals;

std::string name_of(Nemesis nemesis) {
  switch (nemesis) {
    case Nemesis::isolate_master:
      return "isolate_master";
    case Nemesis::split_with_replica:
      return "split_with_replica";
    case Nemesis::pause_master:
      return "pause_master";
    case Nemesis::kill_master:
      return "kill_master";
    case Nemesis::restart_replica:
      return "restart_replica";
  }
  return "?";
}

void hold_after_promotion(const Recorder& faults) {
  faults.record({.kind = EventKind::fault, .detail = "promoted"});
  std::this_thread::sleep_for(2 * kLeaseTtl);  // the fault's length, not a wait for an event
}

bool short_tier() {
  constexpr double kShortScale = 0.15;
  return scale() <= kShortScale;
}

void PartitionNemesisTest::SetUp() {
  if (const std::optional<std::string> why = NetworkLab::unavailable())
    GTEST_SKIP() << "no network lab here: " << *why;
}

namespace {

constexpr int kWorkersPerHost = 2;
constexpr Nemesis kNemeses[] = {Nemesis::isolate_master, Nemesis::split_with_replica,
                                Nemesis::pause_master, Nemesis::kill_master,
                                Nemesis::restart_replica};

// One round of one nemesis: from the fault to the deployment settled again (CLOCK_MONOTONIC ns).
struct Round {
  Nemesis nemesis;
  std::int64_t start = 0;
  std::int64_t settled = 0;
};

// Where in `rounds` the moment `t` falls: the last round that started at or before it.
const Round* round_at(const std::vector<Round>& rounds, std::int64_t t) {
  const Round* found = nullptr;
  for (const Round& round : rounds)
    if (round.start <= t)
      found = &round;
  return found;
}

// The figures of one nemesis over its rounds.
struct NemesisFigures {
  int rounds = 0;
  int overlaps = 0;           // overlapping valid sections
  int double_grants = 0;      // leases provably live at once
  int losses = 0;             // leases the clients were told they lost
  int fence_regressions = 0;  // grants whose fencing number was not above an earlier grant's
  double worst_gap_ms = 0;
};

// The longest time without a grant to anyone inside [from, to).
double longest_gap_ms(const std::vector<Event>& events, std::int64_t from, std::int64_t to) {
  std::int64_t last = from;
  std::int64_t longest = 0;
  for (const Event& e : events) {
    if (e.kind != EventKind::acquire_ok || e.t < from || e.t >= to)
      continue;
    longest = std::max(longest, e.t - last);
    last = e.t;
  }
  longest = std::max(longest, to - last);
  return static_cast<double>(longest) / 1e6;
}

std::map<Nemesis, NemesisFigures> figures_of(const std::vector<Round>& rounds,
                                             const std::vector<Event>& events,
                                             const HistoryReport& report) {
  std::map<Nemesis, NemesisFigures> figures;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    NemesisFigures& f = figures[rounds[i].nemesis];
    ++f.rounds;
    const std::int64_t end = i + 1 < rounds.size() ? rounds[i + 1].start : rounds[i].settled;
    f.worst_gap_ms = std::max(f.worst_gap_ms, longest_gap_ms(events, rounds[i].start, end));
  }
  const auto at = [&](const Violation& v) {
    return round_at(rounds, std::max(v.first.span.begin, v.second.span.begin));
  };
  for (const Violation& v : report.section_overlaps)
    if (const Round* round = at(v))
      ++figures[round->nemesis].overlaps;
  for (const Violation& v : report.double_grants)
    if (const Round* round = at(v))
      ++figures[round->nemesis].double_grants;
  for (const Violation& v : report.fence_order)
    if (const Round* round = at(v))
      ++figures[round->nemesis].fence_regressions;
  for (const Event& e : events)
    if (e.kind == EventKind::loss)
      if (const Round* round = round_at(rounds, e.t))
        ++figures[round->nemesis].losses;
  return figures;
}

}  // namespace

void expect_safe(const HistoryReport& report) {
  EXPECT_TRUE(report.section_overlaps.empty() && report.double_grants.empty() &&
              report.fence_order.empty())
      << report.summary();
}

HistoryReport nemesis_scenario(Deployment& deployment, const std::string& mode,
                               const std::string& query, Rounds rounds) {
  HistoryDir dir("partition_" + mode);
  const Recorder faults(dir.file("test"));
  const std::string url = deployment.url() + query;
  const std::string stop_file = dir.path() + "/stop";
  std::vector<Worker> workers;
  std::vector<std::string> files;
  for (int c = 0; c < kClientHosts; ++c) {
    const std::string host = Deployment::client_host(c);
    for (int w = 0; w < kWorkersPerHost; ++w) {
      files.push_back(dir.file(host + "-" + std::to_string(w)));
      workers.emplace_back(worker_args("lease", url, files.back(),
                                       {{"names", deployment.names()},
                                        {"ttl-ms", std::to_string(kLeaseTtl.count())},
                                        {"cs-ms", "100:400"},
                                        {"retry-ms", "20"},
                                        {"lock-fence", ""},
                                        // The stop file ends them; this only bounds a
                                        // worker the test left behind (a soak's run of one
                                        // mode takes over an hour).
                                        {"duration-ms", "86400000"},
                                        {"stop-file", stop_file},
                                        {"client-name", host}}),
                           deployment.lab().on(deployment.lab().host(host)));
    }
  }

  // The short tier gets its own count: the rounds last seconds each, whatever the scale.
  const int rounds_per_nemesis =
      short_tier() ? rounds.short_tier : static_cast<int>(std::lround(rounds.full * scale()));
  std::vector<Round> played;
  for (int r = 0; r < rounds_per_nemesis; ++r) {
    for (const Nemesis nemesis : kNemeses) {
      Round round{nemesis, monotonic_ns()};
      faults.record({.kind = EventKind::fault, .detail = name_of(nemesis)});
      deployment.run(nemesis, faults);
      round.settled = monotonic_ns();
      faults.record({.kind = EventKind::fault, .detail = "settled"});
      played.push_back(round);
    }
  }

  // Every client works again once the group has settled.
  const std::int64_t settled = played.back().settled;
  for (const std::string& file : files) {
    EXPECT_TRUE(wait_for_history(
        file,
        [&](const std::vector<Event>& events) {
          return std::any_of(events.begin(), events.end(), [&](const Event& e) {
            return e.kind == EventKind::cs_end && e.valid && e.t > settled;
          });
        },
        30s))
        << file << " never held a lease again after the last round";
  }
  std::ofstream{stop_file} << "stop\n";
  for (Worker& worker : workers) {
    EXPECT_TRUE(worker.wait(30s));
    EXPECT_EQ(worker.exit_code(), 0);
  }

  const std::vector<Event> events = read_history(dir.path());
  const HistoryReport report = check_history(events);
  EXPECT_TRUE(report.false_held.empty() && report.late_grants.empty()) << report.summary();
  EXPECT_GT(report.valid_sections, 0u) << report.summary();
  for (const auto& [nemesis, f] : figures_of(played, events, report)) {
    report_figures("partition_" + mode + "_" + name_of(nemesis),
                   {{"rounds", std::to_string(f.rounds)},
                    {"overlaps", std::to_string(f.overlaps)},
                    {"double_grants", std::to_string(f.double_grants)},
                    {"losses", std::to_string(f.losses)},
                    {"fence_regressions", std::to_string(f.fence_regressions)},
                    {"longest_without_grant_ms", ms_figure(f.worst_gap_ms)}});
  }
  return report;
}

}  // namespace leasehold::testing::torture
