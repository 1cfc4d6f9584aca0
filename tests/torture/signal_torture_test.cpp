// Torture: holders stopped (SIGSTOP) inside their critical section past their lease, and holders
// killed (SIGKILL) at random points.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
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

const Event* first_event(const std::vector<Event>& events,
                         const std::function<bool(const Event&)>& match) {
  const auto at = std::find_if(events.begin(), events.end(), match);
  return at == events.end() ? nullptr : &*at;
}

struct SigstopScenario {
  std::string id;
  int rounds = 0;
  // The lock of a round (the holder's and the contender's worker options): a Lock whose fenced
  // write carries a version read from the resource, or a lock that issues fencing numbers.
  std::function<std::vector<std::pair<std::string, std::string>>(int round)> lock_options;
  // The holder's section; it is stopped right after the section begins and makes its stale
  // write at the section's end, after it resumed.
  std::chrono::milliseconds holder_section{0};
  // The fence comes from the lock (--lock-fence in lock_options), not from the resource.
  bool fences_from_lock = false;
  // The writes are guarded (--guarded): refused for the lease the stale holder lost, whatever
  // fence they carry.
  bool guarded_writes = false;
  // How many sections the contender runs: empty for as many as fit in its 2.5 s.
  std::string contender_iterations;
  // Extra figures from the rounds' lock options, e.g. how many rounds used which lock.
  std::vector<std::pair<std::string, std::string>> figures;
};

// A holder is stopped for 1.5 TTLs while inside its critical section. Its lease runs out; a
// contender gets in after the expiry and writes to the fenced resource; the stale holder resumes,
// learns of the loss, and makes its own write anyway (as a holder that does not check its stop
// token would): the resource refuses it.
void run_sigstop(const SigstopScenario& scenario) {
  constexpr auto kTtl = 500ms;
  constexpr auto kStop = kTtl * 3 / 2;
  RedisServer server;
  HistoryDir dir(scenario.id);
  const Recorder faults(dir.file("test"));
  struct Round {
    pid_t holder = 0;
    pid_t contender = 0;
    std::string name;
  };
  std::vector<Round> done;
  for (int round = 0; round < scenario.rounds; ++round) {
    const std::string name = "stop" + std::to_string(round);
    const auto lock_options = scenario.lock_options(round);
    const std::string holder_file = dir.file("holder-" + std::to_string(round));
    auto holder_options = lock_options;
    holder_options.insert(holder_options.end(),
                          {{"names", name},
                           {"ttl-ms", std::to_string(kTtl.count())},
                           {"cs-ms", std::to_string(scenario.holder_section.count())},
                           {"iterations", "1"},
                           {"duration-ms", "30000"},
                           {"fence", ""},
                           {"write-after-loss", ""}});
    Worker holder(worker_args("lease", server.unix_url(), holder_file, holder_options));
    ASSERT_TRUE(wait_for_history(
        holder_file,
        [](const std::vector<Event>& events) {
          return first_event(events, [](const Event& e) { return e.kind == EventKind::cs_begin; });
        },
        10s))
        << "the holder never entered its section";
    auto contender_options = lock_options;
    contender_options.insert(contender_options.end(), {{"names", name},
                                                       {"ttl-ms", std::to_string(kTtl.count())},
                                                       {"cs-ms", "5:20"},
                                                       {"retry-ms", "10"},
                                                       {"duration-ms", "2500"},
                                                       {"fence", ""}});
    if (!scenario.contender_iterations.empty())
      contender_options.push_back({"iterations", scenario.contender_iterations});
    Worker contender(worker_args("lease", server.unix_url(),
                                 dir.file("contender-" + std::to_string(round)),
                                 contender_options));
    faults.record(
        {.kind = EventKind::fault, .name = name, .target = holder.pid(), .detail = "sigstop"});
    holder.signal(SIGSTOP);
    std::this_thread::sleep_for(kStop);  // the fault: how long the holder stays stopped
    faults.record(
        {.kind = EventKind::fault, .name = name, .target = holder.pid(), .detail = "sigcont"});
    holder.signal(SIGCONT);
    ASSERT_TRUE(holder.wait(20s));
    EXPECT_EQ(holder.exit_code(), 0);
    ASSERT_TRUE(contender.wait(20s));
    EXPECT_EQ(contender.exit_code(), 0);
    done.push_back({holder.pid(), contender.pid(), name});
  }

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  const auto losses = loss_reports(events);
  std::vector<std::int64_t> loss_after_resume;
  std::vector<std::int64_t> takeover_after_deadline;
  int stale_attempts = 0;
  int stale_accepted = 0;
  int contender_writes = 0;
  int contender_accepted = 0;
  int stale_fence_after_takeover = 0;
  for (const auto& round : done) {
    SCOPED_TRACE(round.name);
    const auto fault = [&](const char* what) {
      return first_event(events, [&](const Event& e) {
        return e.kind == EventKind::fault && e.target == round.holder && e.detail == what;
      });
    };
    const Event* stopped = fault("sigstop");
    const Event* resumed = fault("sigcont");
    ASSERT_TRUE(stopped && resumed);
    // The stale holder learns of the loss on resume.
    const auto loss = std::find_if(losses.begin(), losses.end(),
                                   [&](const LossReport& l) { return l.pid == round.holder; });
    ASSERT_NE(loss, losses.end()) << "the holder never learned that it lost its lease";
    EXPECT_GE(loss->t, resumed->t);
    EXPECT_LT(loss->t - resumed->t, ns(500ms)) << "the loss was reported late";
    loss_after_resume.push_back(loss->t - resumed->t);
    // The contender got in while the holder was stopped, after the holder's deadline (the
    // double-grant check above proves the "after").
    const Event* contender_in = first_event(events, [&](const Event& e) {
      return e.kind == EventKind::acquire_ok && e.pid == round.contender;
    });
    ASSERT_NE(contender_in, nullptr) << "the contender never got in";
    EXPECT_LT(contender_in->t, resumed->t) << "the contender got in only after the resume";
    EXPECT_GE(contender_in->t, loss->deadline);
    takeover_after_deadline.push_back(contender_in->t - loss->deadline);
    // The stale holder's fenced write was refused because a write of the contender with a fence
    // at least as high had been accepted before it was sent, not by chance.
    const Event* stale = first_event(events, [&](const Event& e) {
      return e.kind == EventKind::fence && e.pid == round.holder;
    });
    ASSERT_NE(stale, nullptr) << "the stale holder made no fenced write";
    const Event* contender_first = first_event(events, [&](const Event& e) {
      return e.kind == EventKind::fence && e.pid == round.contender && e.ok;
    });
    ASSERT_NE(contender_first, nullptr) << "no fenced write of the contender was accepted";
    EXPECT_TRUE(scenario.guarded_writes || first_event(events,
                                                       [&](const Event& e) {
                                                         return e.kind == EventKind::fence &&
                                                                e.pid == round.contender && e.ok &&
                                                                e.t < stale->start &&
                                                                e.value >= stale->value;
                                                       }) != nullptr)
        << "no write of the contender with a fence of " << stale->value
        << " or more was accepted before the stale write";
    // A version read from the resource may be read after the takeover (the stop came between the
    // section's start and the read): then only the contender's later writes keep it refused. A
    // lock-issued fence is fixed at the grant, below every later grant's.
    if (stale->value > contender_first->value)
      ++stale_fence_after_takeover;
    if (scenario.fences_from_lock) {
      EXPECT_LT(stale->value, contender_first->value) << "the stale lease's fence is not lower";
    }
    for (const auto& event : events) {
      if (event.kind != EventKind::fence)
        continue;
      if (event.pid == round.contender) {
        ++contender_writes;
        EXPECT_TRUE(event.ok) << "the contender's fenced write " << event.value << " was refused";
        if (event.ok)
          ++contender_accepted;
      } else if (event.pid == round.holder) {
        ++stale_attempts;
        EXPECT_EQ(event.detail, "after_loss");
        if (event.ok)
          ++stale_accepted;
      }
    }
  }
  EXPECT_EQ(stale_attempts, scenario.rounds);
  EXPECT_EQ(stale_accepted, 0);
  const auto resume = stats_ms(loss_after_resume);
  const auto takeover = stats_ms(takeover_after_deadline);
  std::vector<std::pair<std::string, std::string>> figures = {
      {"rounds", std::to_string(scenario.rounds)}};
  figures.insert(figures.end(), scenario.figures.begin(), scenario.figures.end());
  figures.insert(figures.end(),
                 {{"ttl_ms", std::to_string(kTtl.count())},
                  {"stopped_ms", std::to_string(kStop.count())},
                  {"stale_attempts", std::to_string(stale_attempts)},
                  {"stale_accepted", std::to_string(stale_accepted)},
                  {"contender_writes", std::to_string(contender_writes)},
                  {"contender_accepted", std::to_string(contender_accepted)},
                  {"stale_fence_after_takeover", std::to_string(stale_fence_after_takeover)},
                  {"double_grants", std::to_string(report.double_grants.size())},
                  {"overlaps", std::to_string(report.section_overlaps.size())},
                  {"loss_after_resume_p50", ms_figure(resume.p50_ms)},
                  {"loss_after_resume_max", ms_figure(resume.max_ms)},
                  {"takeover_after_deadline_p50", ms_figure(takeover.p50_ms)},
                  {"takeover_after_deadline_max", ms_figure(takeover.max_ms)}});
  report_figures(scenario.id, figures);
}

// The fence is a version the holder read from the resource under its lease.
TEST(TortureSignals, AHolderStoppedPastItsLeaseLearnsOfTheLossAndItsFencedWriteIsRefused) {
  run_sigstop(
      {.id = "sigstop",
       .rounds = scaled(20, 3),
       .lock_options = [](int) { return std::vector<std::pair<std::string, std::string>>{}; },
       .holder_section = 1500ms,
       .fences_from_lock = false,
       .contender_iterations = {},
       .figures = {}});
}

// The fence is the fencing number the lock granted (token.fence()): a Lock::with_fencing() in even
// rounds, the writer side of an RwLock::with_fencing() in odd ones. The contender's grant came
// later, so its number is higher.
TEST(TortureSignals, AStoppedHoldersWriteWithTheFenceItsLockIssuedIsRefused) {
  const int rounds = scaled(20, 4);
  run_sigstop(
      {.id = "sigstop_lock_fence",
       .rounds = rounds,
       .lock_options =
           [](int round) {
             std::vector<std::pair<std::string, std::string>> options = {{"lock-fence", ""}};
             if (round % 2 == 1)
               options.push_back({"lock", "rwlock-writer"});
             return options;
           },
       // Shorter rounds: the section still ends well after the resume (at 750 ms), and the
       // contender's few sections end before the resume.
       .holder_section = 1000ms,
       .fences_from_lock = true,
       .contender_iterations = "3",
       .figures = {{"lock_rounds", std::to_string((rounds + 1) / 2)},
                   {"rwlock_writer_rounds", std::to_string(rounds / 2)}}});
}

// The writes are guarded writes of the version read from the resource: the stale holder's is
// refused because its lease is no longer held, checked in the same script as the write.
TEST(TortureSignals, AStoppedHoldersGuardedWriteIsRefused) {
  run_sigstop({.id = "sigstop_guarded",
               .rounds = scaled(20, 3),
               .lock_options =
                   [](int) {
                     return std::vector<std::pair<std::string, std::string>>{{"guarded", ""}};
                   },
               .holder_section = 1500ms,
               .fences_from_lock = false,
               .guarded_writes = true,
               .contender_iterations = {},
               .figures = {}});
}

// Holders are killed at random points (acquiring, holding, extending, releasing). No lock key ever
// lives without a TTL, and every name a victim held or may have held is granted to someone else
// within TTL + retry delay + a margin. A probe process tries every name every retry delay, so that
// someone always asks.
TEST(TortureSignals, HoldersKilledAtRandomPointsNeverLeaveALockBehind) {
  constexpr auto kTtl = 500ms;
  constexpr auto kRetry = 20ms;
  constexpr auto kMargin = 400ms;  // scheduling on a loaded 2-core machine, a reply in flight
  const int kills = scaled(200, 30);
  const std::string names = "n0,n1,n2,n3";
  RedisServer server;
  HistoryDir dir("sigkill");
  const Recorder faults(dir.file("test"));
  int spawned = 0;
  const auto spawn = [&](bool probe) {
    std::vector<std::pair<std::string, std::string>> options = {
        {"names", names},
        {"ttl-ms", std::to_string(kTtl.count())},
        {"retry-ms", std::to_string(kRetry.count())},
        {"cs-ms", "0:1000"},
        {"duration-ms", "3600000"}};
    if (probe)
      options.push_back({"probe", ""});
    return Worker(worker_args("lease", server.unix_url(),
                              dir.file((probe ? "probe-" : "worker-") + std::to_string(++spawned)),
                              options));
  };

  // Watches the keys all along: a lock key without a TTL would block its name forever.
  std::atomic<bool> watching{true};
  std::atomic<long long> samples{0};
  std::atomic<long long> keys_seen{0};
  std::atomic<long long> keys_without_ttl{0};
  std::thread watcher([&] {
    const std::string script =
        "local n, bad = 0, 0 "
        "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
        "  n = n + 1 "
        "  if redis.call('PTTL', k) < 0 then bad = bad + 1 end "
        "end "
        "return {n, bad}";
    while (watching) {
      const Reply counts = server.command({"EVAL", script, "0", "torture:*"});
      if (counts.elements.size() == 2) {
        ++samples;
        keys_seen += counts.elements[0].integer;
        keys_without_ttl += counts.elements[1].integer;
      }
      std::this_thread::sleep_for(5ms);  // the watcher's pace
    }
  });

  Worker probe = spawn(true);
  std::vector<Worker> workers;
  for (int w = 0; w < 4; ++w)
    workers.push_back(spawn(false));
  kill_at_random_points(workers, kills, faults, [&] { return spawn(false); });
  // Every takeover has happened (or the bound has long passed).
  const auto bound = kTtl + kRetry + kMargin;
  std::vector<Takeover> found;
  eventually(
      [&] {
        found = takeovers(read_history(dir.path()));
        return std::all_of(found.begin(), found.end(),
                           [](const Takeover& t) { return t.next_grant.has_value(); });
      },
      bound + 5s, 50ms);
  for (auto& worker : workers)
    worker.kill();
  probe.kill();
  // With nobody left, every lock key expires on its own.
  const bool all_expired = eventually(
      [&] {
        return server.command({"KEYS", "torture:Lock:*"}).elements.empty();
      },
      kTtl + 2s);
  watching = false;
  watcher.join();

  const auto events = read_history(dir.path());
  const auto report = check_history(events);
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_TRUE(all_expired) << "lock keys outlived every holder by more than their TTL";
  EXPECT_EQ(keys_without_ttl.load(), 0) << "a lock key without a TTL";
  EXPECT_GT(samples.load(), 0);
  std::vector<std::int64_t> latencies;
  int missing = 0;
  for (const auto& takeover : found) {
    if (!takeover.next_grant) {
      ++missing;
      ADD_FAILURE() << "'" << takeover.name << "' was never granted again after pid "
                    << takeover.dead_pid << " was killed";
      continue;
    }
    const auto latency = *takeover.next_grant - takeover.death;
    latencies.push_back(latency);
    EXPECT_LE(latency, ns(bound)) << "'" << takeover.name << "' after pid " << takeover.dead_pid;
  }
  EXPECT_GT(latencies.size(), 0u) << "no kill hit a holder";
  const auto stats = stats_ms(latencies);
  report_figures("sigkill", {{"kills", std::to_string(kills)},
                             {"ttl_ms", std::to_string(kTtl.count())},
                             {"retry_ms", std::to_string(kRetry.count())},
                             {"takeovers", std::to_string(latencies.size())},
                             {"never_taken_over", std::to_string(missing)},
                             {"takeover_p50", ms_figure(stats.p50_ms)},
                             {"takeover_max", ms_figure(stats.max_ms)},
                             {"bound", ms_figure(static_cast<double>(bound.count()))},
                             {"key_samples", std::to_string(samples.load())},
                             {"keys_without_ttl", std::to_string(keys_without_ttl.load())},
                             {"double_grants", std::to_string(report.double_grants.size())},
                             {"overlaps", std::to_string(report.section_overlaps.size())}});
}

}  // namespace
}  // namespace leasehold::testing::torture
