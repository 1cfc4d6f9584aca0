// Leases across failovers and partitions, checked the way Jepsen checks a database: a master, two
// replicas and three sentinels, each on a host of its own in a NetworkLab, and clients on three
// more hosts that take, extend and release leases through a redis-sentinel:// URL and record
// every step (history.hpp). A nemesis cuts the network, pauses, kills or restarts a server, round
// after round; the history checker then says whether two clients ever held a name at once, how
// many leases were lost, and how long no lease could be granted.
//
// Each mode (a query on the URL) meets each nemesis in turn, for a number of rounds that
// LEASEHOLD_TORTURE_SCALE sets (a few in the short tier, many in scripts/soak), and reports its
// figures per nemesis (FIGURE lines; docs/reliability.md). Whatever the mode, the client's own
// guarantees hold: no lease is said to be held past its deadline, no grant is counted after it,
// and every client works again once the group has settled. Overlaps, and fencing numbers that
// went back, are what the default mode's and one acknowledgement's figures say; safe failover
// promises neither, and the test holds it to that.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "network_lab.hpp"
#include "redis_sentinel.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

enum class Nemesis {
  isolate_master,      // the master alone on one side
  split_with_replica,  // the master, one replica and one client's host on the minority side
  pause_master,        // SIGSTOP past down-after-milliseconds, then SIGCONT
  kill_master,         // SIGKILL, then a restart without its data
  restart_replica,     // a replica killed and restarted without its data
};
constexpr Nemesis kNemeses[] = {Nemesis::isolate_master, Nemesis::split_with_replica,
                                Nemesis::pause_master, Nemesis::kill_master,
                                Nemesis::restart_replica};

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

constexpr int kClientHosts = 3;
constexpr int kWorkersPerHost = 2;
constexpr auto kTtl = 1000ms;
// How long a fault stays after the sentinels named a new master: long enough for a lease granted
// or extended on the old master to outlive its copy on the new one.
constexpr auto kHold = 2 * kTtl;
constexpr auto kSettle = 60s;

// One round of one nemesis: from the fault to the group settled again (CLOCK_MONOTONIC ns).
struct Round {
  Nemesis nemesis;
  std::int64_t start = 0;
  std::int64_t settled = 0;
};

class Deployment {
 public:
  Deployment() : group_(group_options(lab_)) {
    for (int c = 0; c < kClientHosts; ++c)
      lab_.add_host(client_host(c));
  }

  static std::string client_host(int c) { return "client-" + std::to_string(c); }
  NetworkLab& lab() { return lab_; }
  RedisSentinelGroup& group() { return group_; }

  // Runs `nemesis` on the settled group, ends it, and waits until the group has settled again;
  // records the steps in `faults` ("promoted", "ended").
  void run(Nemesis nemesis, const Recorder& faults) {
    faults_ = &faults;
    RedisServer& master = group_.wait_settled(kSettle);
    const std::string master_host = group_.host_name(master);
    switch (nemesis) {
      case Nemesis::isolate_master:
        lab_.partition({master_host});
        hold_after_promotion(master);
        lab_.heal();
        break;
      case Nemesis::split_with_replica:
        lab_.partition({master_host, group_.host_name(a_replica(master)), client_host(0)});
        hold_after_promotion(master);
        lab_.heal();
        break;
      case Nemesis::pause_master:
        master.pause();
        hold_after_promotion(master);
        master.resume();
        break;
      case Nemesis::kill_master:
        master.kill();
        hold_after_promotion(master);
        master.start();
        break;
      case Nemesis::restart_replica: {
        RedisServer& replica = a_replica(master);
        replica.kill();
        replica.start();
        // As its configuration would say: Sentinel rewrites a replica's when it moves it.
        const std::string address = group_.named_address(master);
        replica.command({"REPLICAOF", address.substr(0, address.rfind(':')),
                         address.substr(address.rfind(':') + 1)});
        break;
      }
    }
    faults.record({.kind = EventKind::fault, .detail = "ended"});
    group_.wait_settled(kSettle);
  }

 private:
  static RedisSentinelGroup::Options group_options(NetworkLab& lab) {
    RedisSentinelGroup::Options options;
    options.lab = &lab;
    return options;
  }

  RedisServer& a_replica(const RedisServer& master) {
    for (std::size_t i = 0; i < group_.server_count(); ++i)
      if (&group_.server(i) != &master)
        return group_.server(i);
    throw std::logic_error("no replica");
  }

  void hold_after_promotion(const RedisServer& old_master) {
    group_.wait_replaced(old_master, kSettle);
    faults_->record({.kind = EventKind::fault, .detail = "promoted"});
    std::this_thread::sleep_for(kHold);  // the fault's length, not a wait for an event
  }

  NetworkLab lab_;
  RedisSentinelGroup group_;
  const Recorder* faults_ = nullptr;
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

// Every nemesis in turn, `short_rounds` times each in the short tier and `full_rounds` times the
// scale otherwise, under clients whose URL ends in `query`; the figures reported as
// "partition_<mode>_<nemesis>". The history's report.
HistoryReport nemesis_scenario(const std::string& mode, const std::string& query, int short_rounds,
                               int full_rounds) {
  Deployment deployment;
  HistoryDir dir("partition_" + mode);
  const Recorder faults(dir.file("test"));
  const std::string url = deployment.group().url() + query;
  const std::string stop_file = dir.path() + "/stop";
  std::vector<Worker> workers;
  std::vector<std::string> files;
  for (int c = 0; c < kClientHosts; ++c) {
    const std::string host = Deployment::client_host(c);
    for (int w = 0; w < kWorkersPerHost; ++w) {
      files.push_back(dir.file(host + "-" + std::to_string(w)));
      workers.emplace_back(worker_args("lease", url, files.back(),
                                       {{"names", name_list(2)},
                                        {"ttl-ms", std::to_string(kTtl.count())},
                                        {"cs-ms", "100:400"},
                                        {"retry-ms", "20"},
                                        {"lock-fence", ""},
                                        {"duration-ms", "3600000"},
                                        {"stop-file", stop_file},
                                        {"client-name", host}}),
                           deployment.lab().on(deployment.lab().host(host)));
    }
  }

  // The short tier's scale (LEASEHOLD_TORTURE_SCALE unset or "short") gets its own count: the
  // rounds last seconds each, whatever the scale.
  constexpr double kShortScale = 0.15;
  const int rounds_per_nemesis =
      scale() <= kShortScale ? short_rounds : static_cast<int>(std::lround(full_rounds * scale()));
  std::vector<Round> rounds;
  for (int r = 0; r < rounds_per_nemesis; ++r) {
    for (const Nemesis nemesis : kNemeses) {
      Round round{nemesis, monotonic_ns()};
      faults.record({.kind = EventKind::fault, .detail = name_of(nemesis)});
      deployment.run(nemesis, faults);
      round.settled = monotonic_ns();
      faults.record({.kind = EventKind::fault, .detail = "settled"});
      rounds.push_back(round);
    }
  }

  // Every client works again once the group has settled.
  const std::int64_t settled = rounds.back().settled;
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
  for (const auto& [nemesis, f] : figures_of(rounds, events, report)) {
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

class PartitionNemesis : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::optional<std::string> why = NetworkLab::unavailable())
      GTEST_SKIP() << "no network lab here: " << *why;
  }
};

TEST_F(PartitionNemesis, WithoutAcknowledgementsTheClientsGuaranteesHold) {
  nemesis_scenario("acks0", "", 1, 6);
}

TEST_F(PartitionNemesis, WithOneAcknowledgementTheClientsGuaranteesHold) {
  nemesis_scenario("acks1", "?replica_acks=1&replica_ack_timeout=200ms", 1, 6);
}

TEST_F(PartitionNemesis, WithSafeFailoverNoTwoClientsEverHoldANameAtOnce) {
  const HistoryReport report =
      nemesis_scenario("safe", "?safe_failover=1&replica_ack_timeout=200ms", 2, 40);
  EXPECT_TRUE(report.section_overlaps.empty() && report.double_grants.empty() &&
              report.fence_order.empty())
      << report.summary();
}

}  // namespace
}  // namespace leasehold::testing::torture
