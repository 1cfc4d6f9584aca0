// Torture: three electors (run_elector, one process each) stand for one name while the leader is
// killed (SIGKILL, then another elector is started in its place) or stopped (SIGSTOP, inside its
// term's section) past its lease, round after round. The history checker finds no two valid terms
// at once, terms that strictly increase in the order they were granted, and no term reported valid
// past its lease's deadline: a stopped leader's work is stopped before it can act on a lease Redis
// let expire.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

TEST(TortureElections, LeadersKilledOrStoppedNeverLeaveTwoValidTermsAtOnce) {
  constexpr auto kTtl = 500ms;
  const int rounds = scaled(60, 12);
  RedisServer server;
  HistoryDir dir("elector");
  const Recorder faults(dir.file("test"));
  const std::string stop_file = dir.path() + "/stop";
  int spawned = 0;
  std::map<pid_t, std::string> history_of;  // each elector's history file
  const auto spawn = [&] {
    const std::string history = dir.file("elector-" + std::to_string(++spawned));
    Worker elector(worker_args("elector", server.unix_url(), history,
                               {{"names", "leader"},
                                {"ttl-ms", std::to_string(kTtl.count())},
                                {"cs-ms", "20:300"},
                                {"duration-ms", "3600000"},
                                {"stop-file", stop_file}}));
    history_of[elector.pid()] = history;
    return elector;
  };
  // Whether the elector whose history is `file` has begun the section of its term `term`.
  const auto in_section = [](const std::vector<Event>& events, std::uint64_t term) {
    std::uint64_t lease = 0;
    for (const Event& event : events) {
      if (event.kind == EventKind::acquire_ok && static_cast<std::uint64_t>(event.value) == term)
        lease = event.lease;
      if (lease != 0 && event.kind == EventKind::cs_begin && event.lease == lease)
        return true;
    }
    return false;
  };
  std::vector<Worker> electors;
  for (int e = 0; e < 3; ++e)
    electors.push_back(spawn());

  Client redis(server.unix_url());
  const Election<std::string> elections("torture", kTtl, "torture");
  // The pid of the elector leading now, once one leads with a term above `after`.
  const auto leader_after =
      [&](std::uint64_t after) -> std::optional<std::pair<pid_t, std::uint64_t>> {
    std::optional<std::pair<pid_t, std::uint64_t>> found;
    eventually(
        [&] {
          const auto leading = redis.process(elections.leader(std::string("leader")));
          if (leading && leading->holder && leading->term > after)
            found.emplace(static_cast<pid_t>(leading->holder->pid), leading->term);
          return found.has_value();
        },
        10s, 2ms);
    return found;
  };

  int kills = 0;
  int stops = 0;
  std::uint64_t term = 0;
  for (int round = 0; round < rounds; ++round) {
    const auto leading = leader_after(term);
    ASSERT_TRUE(leading) << "nobody led within 10 s in round " << round;
    term = leading->second;
    const auto victim = std::find_if(electors.begin(), electors.end(),
                                     [&](const Worker& w) { return w.pid() == leading->first; });
    if (victim == electors.end())
      continue;  // its term ended meanwhile, and the leader read was of another
    if (round % 2 == 0) {
      faults.record({.kind = EventKind::fault, .target = victim->pid(), .detail = "sigkill"});
      victim->kill();
      *victim = spawn();
      ++kills;
    } else {
      // Stopped inside its term's section (where a leader acts), or not at all if the term ended.
      if (!wait_for_history(
              history_of[victim->pid()],
              [&](const std::vector<Event>& events) { return in_section(events, term); }, 2s))
        continue;
      faults.record({.kind = EventKind::fault, .target = victim->pid(), .detail = "sigstop"});
      victim->signal(SIGSTOP);
      // Past its lease: another elector leads meanwhile, then the stopped one resumes.
      const auto next = leader_after(term);
      EXPECT_TRUE(next) << "nobody took over from a stopped leader in round " << round;
      if (next)
        term = next->second;
      victim->signal(SIGCONT);
      faults.record({.kind = EventKind::fault, .target = victim->pid(), .detail = "sigcont"});
      ++stops;
    }
  }
  std::ofstream{stop_file} << "stop\n";
  for (auto& elector : electors)
    EXPECT_TRUE(elector.wait(10s)) << "an elector did not stop";

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_GE(report.fenced_grants, static_cast<std::size_t>(rounds)) << "every term is a grant";
  EXPECT_GT(report.losses, 0u) << "no stopped leader learned of its loss";
  report_figures("elector", {{"rounds", std::to_string(rounds)},
                             {"kills", std::to_string(kills)},
                             {"stops", std::to_string(stops)},
                             {"terms", std::to_string(report.fenced_grants)},
                             {"valid_terms", std::to_string(report.valid_sections)},
                             {"losses", std::to_string(report.losses)},
                             {"overlaps", std::to_string(report.section_overlaps.size())},
                             {"fence_order", std::to_string(report.fence_order.size())},
                             {"false_held", std::to_string(report.false_held.size())}});
}

}  // namespace
}  // namespace leasehold::testing::torture
