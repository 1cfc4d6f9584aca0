// Torture: the server fails under the holders. Redis restarted without persistence and with
// appendfsync always; connections killed (CLIENT KILL) and the server paused (CLIENT PAUSE)
// while leases are being extended.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "redis_server.hpp"
#include "torture.hpp"

namespace leasehold::testing::torture {
namespace {

using namespace std::chrono_literals;

std::int64_t ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

struct Restart {
  std::int64_t down = 0;  // killed
  std::int64_t up = 0;    // serving again
};

// A section overlapping another while the library said both were valid is explained by a restart
// without persistence when its lease may have been granted before the crash (the with_lock call
// that took it began before) and the section ran on past the crash: the restarted server had
// forgotten the lock, and another process took it.
class RestartExplanation {
 public:
  RestartExplanation(const std::vector<Event>& events, std::vector<Restart> restarts)
      : restarts_(std::move(restarts)) {
    for (const auto& event : events)
      if (event.kind == EventKind::acquire_call)
        calls_[{event.pid, event.tid}].push_back(event.t);
  }

  bool explains(const Party& section) const {
    const auto calls = calls_.find({section.pid, section.tid});
    if (calls == calls_.end())
      return false;
    // The last with_lock call of that thread before the section began.
    const auto after =
        std::upper_bound(calls->second.begin(), calls->second.end(), section.span.begin);
    if (after == calls->second.begin())
      return false;
    const std::int64_t call = *std::prev(after);
    return std::any_of(restarts_.begin(), restarts_.end(), [&](const Restart& r) {
      return call < r.down && section.span.end > r.down;
    });
  }

 private:
  std::vector<Restart> restarts_;
  std::map<std::pair<int, int>, std::vector<std::int64_t>> calls_;  // per thread, in order
};

void restart_scenario(const std::string& id, bool append_only) {
  constexpr int kProcesses = 4;
  const auto duration = scaled(30s, 5s);
  const int restarts = scaled(10, 2);
  RedisServer::Options server_options;
  if (append_only)
    server_options.extra_args = {"--appendonly", "yes", "--appendfsync", "always"};
  RedisServer server(server_options);
  HistoryDir dir(id);
  const Recorder faults(dir.file("test"));
  std::vector<Worker> workers;
  for (int p = 0; p < kProcesses; ++p) {
    workers.emplace_back(worker_args("with-lock", server.unix_url(),
                                     dir.file("worker-" + std::to_string(p)),
                                     {{"names", "n0,n1"},
                                      {"threads", "2"},
                                      {"duration-ms", std::to_string(duration.count())},
                                      {"ttl-ms", "1000"},
                                      {"hold-us", "20000"},
                                      {"retry-ms", "5"}}));
  }
  std::vector<Restart> done;
  for (int r = 0; r < restarts; ++r) {
    std::this_thread::sleep_for(duration / (restarts + 1));  // the restarts' pace
    Restart restart;
    restart.down = monotonic_ns();
    faults.record({.kind = EventKind::fault, .detail = "redis_down"});
    server.kill();  // a crash: whatever is not on disk is gone
    server.start();
    restart.up = monotonic_ns();
    faults.record({.kind = EventKind::fault, .detail = "redis_up"});
    done.push_back(restart);
  }
  for (auto& worker : workers) {
    ASSERT_TRUE(worker.wait(duration + 60s));
    EXPECT_EQ(worker.exit_code(), 0);
  }

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  // The library reconnects: every process completed sections after the last restart.
  for (const auto& worker : workers) {
    const bool after = std::any_of(events.begin(), events.end(), [&](const Event& e) {
      return e.pid == worker.pid() && e.kind == EventKind::cs_end && e.valid &&
             e.t > done.back().up;
    });
    EXPECT_TRUE(after) << "pid " << worker.pid() << " never worked again after the last restart";
  }
  const RestartExplanation explanation(events, done);
  int explained = 0;
  for (const auto& overlap : report.section_overlaps)
    if (explanation.explains(overlap.first) || explanation.explains(overlap.second))
      ++explained;
  const auto unexplained = static_cast<int>(report.section_overlaps.size()) - explained;
  EXPECT_EQ(unexplained, 0) << report.summary();
  EXPECT_TRUE(report.double_grants.empty() && report.false_held.empty() &&
              report.late_grants.empty())
      << report.summary();
  std::string counter_exact = "n/a";  // the restart wiped the counter too
  if (append_only) {
    // Nothing acknowledged is lost: no overlap, and the counters count every section.
    EXPECT_TRUE(report.section_overlaps.empty()) << report.summary();
    EXPECT_TRUE(report.counter_errors.empty()) << report.summary();
    bool exact = report.counter_errors.empty();
    for (const std::string name : {"n0", "n1"}) {
      const Reply value = server.command({"GET", "torture:counter:" + name});
      const auto problems =
          check_counter_final(events, name, value.is_nil() ? 0 : std::stoll(value.str));
      EXPECT_TRUE(problems.empty()) << problems.front();
      exact = exact && problems.empty();
    }
    counter_exact = exact ? "yes" : "no";
  }
  report_figures(id, {{"restarts", std::to_string(restarts)},
                      {"seconds", seconds_figure(duration)},
                      {"sections", std::to_string(report.valid_sections)},
                      {"overlaps", std::to_string(report.section_overlaps.size())},
                      {"overlaps_across_a_restart", std::to_string(explained)},
                      {"losses", std::to_string(report.losses)},
                      {"counter_exact", counter_exact}});
}

TEST(TortureRedisFaults, RestartsWithoutPersistenceOverlapOnlyAcrossARestart) {
  restart_scenario("restart_no_persistence", false);
}

TEST(TortureRedisFaults, RestartsWithAppendfsyncAlwaysNeverOverlap) {
  restart_scenario("restart_appendfsync_always", true);
}

// The id of the connection named `name`, from CLIENT LIST; 0 if there is none.
long long client_id(const RedisServer& server, const std::string& name) {
  std::istringstream list(server.command({"CLIENT", "LIST"}).str);
  for (std::string line; std::getline(list, line);) {
    if (line.find(" name=" + name + " ") == std::string::npos)
      continue;
    const auto at = line.find("id=");
    return std::stoll(line.substr(at + 3));
  }
  return 0;
}

enum class ServerFault { pause, pause_and_kill, kills };

struct FaultRound {
  pid_t holder = 0;
  int kills = 0;
};

// One holder with a section of five TTLs; `fault` hits it once the section began.
FaultRound fault_round(RedisServer& server, const HistoryDir& dir, const Recorder& faults,
                       ServerFault fault, int round, std::mt19937& random) {
  constexpr auto kTtl = 400ms;
  const std::string name = "f" + std::to_string(round);
  const std::string client_name = "holder-" + std::to_string(round);
  const std::string file = dir.file("holder-" + std::to_string(round));
  Worker holder(worker_args("lease", server.tcp_url(), file,
                            {{"names", name},
                             {"ttl-ms", std::to_string(kTtl.count())},
                             {"cs-ms", "2000"},
                             {"iterations", "1"},
                             {"duration-ms", "30000"},
                             {"client-name", client_name}}));
  FaultRound result{holder.pid(), 0};
  const bool in_section = wait_for_history(
      file,
      [](const std::vector<Event>& events) {
        return std::any_of(events.begin(), events.end(),
                           [](const Event& e) { return e.kind == EventKind::cs_begin; });
      },
      10s);
  EXPECT_TRUE(in_section);
  if (!in_section)
    return result;
  const auto kill_connection = [&] {
    const long long id = client_id(server, client_name);
    if (id == 0)
      return;  // between connections: nothing to kill
    faults.record(
        {.kind = EventKind::fault, .name = name, .target = holder.pid(), .detail = "client_kill"});
    server.command({"CLIENT", "KILL", "ID", std::to_string(id)});
    ++result.kills;
  };
  // Somewhere in the keep-alive's cycle.
  std::this_thread::sleep_for(std::chrono::milliseconds(
      std::uniform_int_distribution<int>(0, static_cast<int>(kTtl.count() / 3))(random)));
  if (fault == ServerFault::kills) {
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    while (std::chrono::steady_clock::now() < until) {
      kill_connection();
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::uniform_int_distribution<int>(10, 150)(random)));  // the next kill's moment
    }
  } else {
    // Writes (the extension script among them) wait until the pause ends: twice the TTL.
    faults.record(
        {.kind = EventKind::fault, .name = name, .target = holder.pid(), .detail = "client_pause"});
    server.command({"CLIENT", "PAUSE", std::to_string((kTtl * 2).count()), "WRITE"});
    if (fault == ServerFault::pause_and_kill) {
      std::this_thread::sleep_for(kTtl / 2);  // into the pause
      kill_connection();
    }
  }
  EXPECT_TRUE(holder.wait(20s));
  EXPECT_EQ(holder.exit_code(), 0);
  return result;
}

// While the server is paused (or the connection dies under a paused server), an extension has
// no answer: the lease is uncertain, and is lost at its deadline — not before, and never reported
// held after it.
TEST(TortureRedisFaults, APausedServerMakesTheLeaseUncertainThenLostAtTheDeadline) {
  const int rounds = scaled(10, 2);
  RedisServer server;
  HistoryDir dir("client_pause");
  const Recorder faults(dir.file("test"));
  std::mt19937 random(std::random_device{}());
  std::vector<pid_t> holders;
  int kills = 0;
  for (int round = 0; round < 2 * rounds; ++round) {
    const auto fault = round % 2 ? ServerFault::pause_and_kill : ServerFault::pause;
    const auto result = fault_round(server, dir, faults, fault, round, random);
    holders.push_back(result.holder);
    kills += result.kills;
  }
  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  const auto losses = loss_reports(events);
  std::vector<std::int64_t> after_deadline;
  int early = 0;
  for (const pid_t holder : holders) {
    const auto loss = std::find_if(losses.begin(), losses.end(),
                                   [&](const LossReport& l) { return l.pid == holder; });
    ASSERT_NE(loss, losses.end()) << "pid " << holder << " was never told its lease was lost";
    if (loss->t < loss->deadline)
      ++early;
    EXPECT_GE(loss->t, loss->deadline) << "lost while still uncertain";
    EXPECT_LE(loss->t - loss->deadline, ns(300ms)) << "still reported held after the deadline";
    after_deadline.push_back(loss->t - loss->deadline);
  }
  const auto stats = stats_ms(after_deadline);
  report_figures("client_pause", {{"rounds", std::to_string(holders.size())},
                                  {"connections_killed", std::to_string(kills)},
                                  {"losses", std::to_string(losses.size())},
                                  {"lost_before_deadline", std::to_string(early)},
                                  {"loss_after_deadline_p50", ms_figure(stats.p50_ms)},
                                  {"loss_after_deadline_max", ms_figure(stats.max_ms)},
                                  {"false_held", std::to_string(report.false_held.size())}});
}

// Connections killed again and again while a lease is held: the client reconnects and the
// extension, which is safe to resend, goes through on the next connection. A lease is lost only
// if no extension got through before its deadline — never earlier, never reported later.
TEST(TortureRedisFaults, KilledConnectionsDuringExtensionNeverYieldAFalseHeld) {
  const int rounds = scaled(10, 2);
  RedisServer server;
  HistoryDir dir("client_kill");
  const Recorder faults(dir.file("test"));
  std::mt19937 random(std::random_device{}());
  int kills = 0;
  for (int round = 0; round < rounds; ++round)
    kills += fault_round(server, dir, faults, ServerFault::kills, round, random).kills;
  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  const auto losses = loss_reports(events);
  for (const auto& loss : losses) {
    EXPECT_GE(loss.t, loss.deadline) << "lost while still uncertain: " << loss.cause;
    EXPECT_LE(loss.t - loss.deadline, ns(300ms)) << "still reported held after the deadline";
  }
  EXPECT_GT(kills, rounds) << "the connections were hardly ever killed";
  report_figures("client_kill", {{"rounds", std::to_string(rounds)},
                                 {"connections_killed", std::to_string(kills)},
                                 {"sections", std::to_string(report.sections)},
                                 {"valid_sections", std::to_string(report.valid_sections)},
                                 {"losses", std::to_string(losses.size())},
                                 {"false_held", std::to_string(report.false_held.size())}});
}

}  // namespace
}  // namespace leasehold::testing::torture
