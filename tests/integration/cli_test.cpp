// The leasehold command: the real binary, a real redis-server, real child processes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "cli_fixture.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"
#include "test_certificates.hpp"

extern char** environ;

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::Cli;
using cli_testing::CliTest;
using cli_testing::until_exists;
using testing::eventually;
using testing::read_file;
using testing::RedisServer;

TEST_F(CliTest, RunsTheCommandUnderTheLeaseAndPassesItsEnvironmentAndExitCode) {
  auto run =
      cli({"run", name_, "--", "sh", "-c", "echo \"$LEASEHOLD_NAME $LEASEHOLD_TOKEN\"; exit 3"});
  EXPECT_EQ(run.wait(), 3);
  const std::string out = run.out();
  EXPECT_EQ(out.substr(0, name_.size() + 1), name_ + " ");
  EXPECT_EQ(out.size(), name_.size() + 1 + 32 + 1) << out;  // the token: 32 hex digits
  EXPECT_FALSE(exists(writer_key())) << "released when the command ended";
}

TEST_F(CliTest, AnExclusiveRunGetsAFencingNumberThatGrowsASharedOneNone) {
  auto first = cli({"run", name_, "--", "sh", "-c", "echo \"$LEASEHOLD_FENCE\""});
  EXPECT_EQ(first.wait(), 0);
  auto second = cli({"run", name_, "--", "sh", "-c", "echo \"$LEASEHOLD_FENCE\""});
  EXPECT_EQ(second.wait(), 0);
  ASSERT_FALSE(first.out().empty());
  EXPECT_GT(std::stoull(second.out()), std::stoull(first.out())) << first.out() << second.out();
  auto shared =
      cli({"run", "--shared", name_, "--", "sh", "-c", "echo \"[${LEASEHOLD_FENCE-unset}]\""});
  EXPECT_EQ(shared.wait(), 0);
  EXPECT_EQ(shared.out(), "[unset]\n");
}

TEST_F(CliTest, AChildKilledBySignalNGives128PlusN) {
  auto run = cli({"run", name_, "--", "sh", "-c", "kill -USR1 $$"});
  EXPECT_EQ(run.wait(), 128 + SIGUSR1);
}

TEST_F(CliTest, NonblockOnAHeldLeaseExitsWithTheConflictCodeAtOnceAndNeverRuns) {
  auto holder = cli({"run", name_, "--", "sleep", "5"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  auto refused = cli({"run", "-n", name_, "--", "touch", file(".ran")});
  EXPECT_EQ(refused.wait(), 1);
  EXPECT_LT(refused.took(), 2s);
  auto custom = cli({"run", "--nonblock", "-E", "42", name_, "--", "touch", file(".ran")});
  EXPECT_EQ(custom.wait(), 42);
  EXPECT_FALSE(std::filesystem::exists(file(".ran")));
}

TEST_F(CliTest, WaitGivesUpAfterAboutTheGivenTime) {
  auto holder = cli({"run", name_, "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  auto waiter = cli({"-v", "run", "-w", "1s", name_, "--", "true"});
  EXPECT_EQ(waiter.wait(), 1);
  EXPECT_GE(waiter.took(), 1s);
  EXPECT_LT(waiter.took(), 3s);
  EXPECT_NE(waiter.err().find("waiting for '" + name_ + "': held exclusively by"),
            std::string::npos)
      << waiter.err();
}

TEST_F(CliTest, AWaitingRunGetsInWhenTheHolderEnds) {
  auto holder = cli({"run", name_, "--", "sleep", "0.5"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  auto waiter = cli({"run", name_, "--", "echo", "mine now"});
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(waiter.wait(), 0);
  EXPECT_EQ(waiter.out(), "mine now\n");
}

// Each waiter's command appends "<index> <start µs> <end µs>": they run in the order the waiters
// started, and each starts soon after the one before it ended (told, not polling).
TEST_F(CliTest, WaitingRunsGoInTheOrderTheyStartedEachSoonAfterThePreviousEnds) {
  const std::string log = file(".order");
  const std::string queue = writer_key() + ":queue";
  // The holder holds until every waiter has queued (its child waits for the file `go`).
  const std::string go = file(".go");
  auto holder = cli({"run", name_, "--", "sh", "-c", until_exists(go)});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  constexpr int kWaiters = 5;
  std::deque<Cli> waiters;  // built in place: a Cli copied and destroyed kills its process
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back(
        // bash reads the clock itself ($EPOCHREALTIME, in µs without its point): a `date`
        // forked for it would add two process starts to every gap measured.
        std::vector<std::string>{"--redis", server_->unix_url(), "run", name_, "--", "bash", "-c",
                                 "s=${EPOCHREALTIME/[.,]/}; sleep 0.05; echo " + std::to_string(i) +
                                     " $s ${EPOCHREALTIME/[.,]/} >> " + log},
        server_->dir());
    ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == i + 1; }));
  }
  std::ofstream{go};  // the holder's command ends
  EXPECT_EQ(holder.wait(), 0);
  for (auto& waiter : waiters)
    EXPECT_EQ(waiter.wait(), 0);
  std::ifstream in(log);
  std::vector<std::array<long long, 3>> runs;
  for (long long index, start, end; in >> index >> start >> end;)
    runs.push_back({index, start, end});
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kWaiters));
  std::vector<long long> gaps;
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(runs[i][0], i) << "the waiters ran out of order";
    if (i > 0)
      gaps.push_back((runs[i][1] - runs[i - 1][2]) / 1'000);
  }
  std::sort(gaps.begin(), gaps.end());
  // The reference, measured now: how long a run of the same command on a free name takes from
  // its start to its command's (a process start, a connection, an acquire, a process start).
  std::vector<long long> fresh;
  for (int i = 0; i < 5; ++i) {
    const auto started = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    auto run = cli({"run", name_ + "-fresh", "--", "bash", "-c", "echo ${EPOCHREALTIME/[.,]/}"});
    ASSERT_EQ(run.wait(), 0) << run.err();
    fresh.push_back((std::stoll(run.out()) - started.count()) / 1'000);
  }
  std::sort(fresh.begin(), fresh.end());
  std::cout << "hand-off gaps (ms, process exit to the next command's start):";
  for (long long gap : gaps)
    std::cout << " " << gap;
  std::cout << "; a fresh run's start: " << fresh[fresh.size() / 2] << "\n";
  EXPECT_GE(gaps.front(), 0) << "two runs overlapped";
  EXPECT_LT(gaps.back(), 500) << "a hand-off waited for the recheck";
  // A waiting run is told of the release: it starts its command sooner after the one before it
  // ends than a new run starts its own. Polling every 100 ms would add 50 to the median gap, more
  // than a whole fresh run takes; a loaded machine slows both alike.
  EXPECT_LT(gaps[gaps.size() / 2], fresh[fresh.size() / 2])
      << "the median hand-off is no faster than starting a new run";
  EXPECT_FALSE(exists(queue));
}

// The run at the head of the queue is SIGKILLed: it never asks again and never leaves. The one
// behind it, told of the release too, gets in once the dead one's grace (300 ms) is over, not
// when its place runs out.
TEST_F(CliTest, AKilledHeadWaiterDelaysTheNextOneByItsGraceAtMost) {
  const std::string queue = writer_key() + ":queue";
  const std::string go = file(".go");  // the holder's command ends when it appears
  auto holder = cli({"run", name_, "--", "sh", "-c", until_exists(go)});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  auto head = cli({"run", name_, "--", "true"});
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }));
  auto next = cli({"run", name_, "--", "echo", "next"});
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 2; }));
  head.signal(SIGKILL);
  EXPECT_EQ(head.wait(), 128 + SIGKILL);
  std::ofstream{go};
  EXPECT_EQ(holder.wait(), 0);
  const auto released_at = std::chrono::steady_clock::now();
  EXPECT_EQ(next.wait(10s), 0);
  EXPECT_EQ(next.out(), "next\n");
  // The grace, a run of echo, and a margin for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - released_at, 1000ms);
  EXPECT_FALSE(exists(queue));
}

// A run killed with SIGKILL can neither extend its lease nor stop its command: its watchdog
// stops the command's group at once, long before the lease runs out.
TEST_F(CliTest, AKilledRunsCommandIsStoppedBeforeItsLeaseRunsOut) {
  const std::string pid_file = file(".pid");
  auto run = cli({"run", "-t", "30s", "--kill-after", "300ms", name_, "--", "sh", "-c",
                  "echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file +
                      "; while :; do sleep 0.02; done"});
  ASSERT_TRUE(eventually([&] { return !read_file(pid_file).empty(); }));
  const pid_t command = std::stoi(read_file(pid_file));
  run.signal(SIGKILL);
  EXPECT_EQ(run.wait(), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return !cli_testing::running(command); }, 3s))
      << "the command still runs without leasehold";
  if (cli_testing::running(command))
    ::kill(-command, SIGKILL);  // a failed run leaves no command behind
  EXPECT_NE(run.err().find("ended while its command ran"), std::string::npos) << run.err();
  EXPECT_TRUE(exists(writer_key())) << "the lease is left to run out (30 s): nobody may release it";
}

TEST_F(CliTest, AWaitingRunEndedBySigtermExits143AndLeavesTheQueue) {
  const std::string queue = writer_key() + ":queue";
  auto holder = cli({"run", name_, "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  auto waiter = cli({"run", name_, "--", "true"});
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }));
  waiter.signal(SIGTERM);
  EXPECT_EQ(waiter.wait(5s), 128 + SIGTERM);
  EXPECT_EQ(server_->command({"ZCARD", queue}).integer, 0);
  holder.signal(SIGTERM);
  holder.wait();
}

// Start and end times (ms) written by children, one "start end" line each.
std::vector<std::pair<long long, long long>> intervals(const std::string& path) {
  std::vector<std::pair<long long, long long>> out;
  std::ifstream in(path);
  for (long long a, b; in >> a >> b;)
    out.emplace_back(a, b);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(CliTest, SharedRunsOverlapAndExclusiveOnesDoNot) {
  // Each child appends "start end" in ms (date +%s%3N: one clock for all the children).
  const std::string log = file(".times");
  const std::string child =
      "s=$(date +%s%3N); sleep 0.4; e=$(date +%s%3N); echo \"$s $e\" >> " + log;
  // A shared child marks its start, then holds its lease until the other has started too (10 s at
  // most): had the second run been kept out, the first would end alone, before it started.
  const std::string marks = file(".started");
  const std::string shared_child = "s=$(date +%s%3N); echo >> " + marks +
                                   "; i=0; while [ $(wc -l < " + marks +
                                   ") -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); "
                                   "done; e=$(date +%s%3N); echo \"$s $e\" >> " +
                                   log;
  {
    auto a = cli({"run", "-s", name_, "--", "sh", "-c", shared_child});
    auto b = cli({"run", "--shared", name_, "--", "sh", "-c", shared_child});
    EXPECT_EQ(a.wait(), 0);
    EXPECT_EQ(b.wait(), 0);
  }
  auto shared = intervals(log);
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_LT(shared[1].first, shared[0].second) << "shared runs did not overlap";
  std::filesystem::remove(log);
  {
    auto a = cli({"run", "-x", name_, "--", "sh", "-c", child});
    auto b = cli({"run", name_, "--", "sh", "-c", child});
    EXPECT_EQ(a.wait(), 0);
    EXPECT_EQ(b.wait(), 0);
  }
  auto exclusive = intervals(log);
  ASSERT_EQ(exclusive.size(), 2u);
  EXPECT_GE(exclusive[1].first, exclusive[0].second) << "exclusive runs overlapped";
}

// Four runs with --limit 2: two at a time, never three, and the ones that waited got in as a
// permit came free.
TEST_F(CliTest, ALimitOfTwoRunsTwoAtATimeNeverThree) {
  const std::string log = file(".permits");
  const std::string child =
      "s=$(date +%s%3N); sleep 0.3; e=$(date +%s%3N); echo \"$s $e\" >> " + log;
  {
    std::deque<Cli> runs;  // built in place: a Cli copied and destroyed kills its process
    for (int i = 0; i < 4; ++i)
      runs.emplace_back(std::vector<std::string>{"--redis", server_->unix_url(), "run", "--limit",
                                                 "2", name_, "--", "sh", "-c", child},
                        server_->dir());
    for (auto& run : runs)
      EXPECT_EQ(run.wait(), 0);
  }
  const auto runs = intervals(log);
  ASSERT_EQ(runs.size(), 4u);
  int most = 0;
  for (const auto& [start, end] : runs) {
    int at_once = 0;
    for (const auto& [other_start, other_end] : runs)
      at_once += other_start <= start && start < other_end;
    most = std::max(most, at_once);
  }
  EXPECT_EQ(most, 2) << "not two at a time";
  auto usage = cli({"run", "--limit", "2", "-s", name_, "--", "true"});
  EXPECT_EQ(usage.wait(), 64);
  auto zero = cli({"run", "--limit", "0", name_, "--", "true"});
  EXPECT_EQ(zero.wait(), 64);
}

// The command outlives its lease's TTL five times over. A contender is refused; past two TTLs the
// key still holds the holder's value (extended, not expired and taken: nobody else asked), and
// the holder's exit 0 shows the lease was never lost. Nothing here depends on how fast a contender
// process starts, which a sanitizer on a busy machine makes slow.
TEST_F(CliTest, AChildRunningFiveTimesTheTtlKeepsItsLease) {
  auto holder = cli({"run", "-t", "300ms", name_, "--", "sleep", "1.5"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  const auto seen_at = std::chrono::steady_clock::now();
  const std::string value = server_->command({"GET", writer_key()}).str;
  ASSERT_FALSE(value.empty());
  auto contender = cli({"run", "-n", name_, "--", "true"});
  EXPECT_EQ(contender.wait(), 1) << "a contender got in while the command ran";
  ASSERT_TRUE(eventually([&] { return std::chrono::steady_clock::now() - seen_at >= 650ms; }));
  EXPECT_EQ(server_->command({"GET", writer_key()}).str, value)
      << "the lease did not outlive two TTLs";
  EXPECT_EQ(holder.wait(), 0) << "the lease was lost";
}

TEST_F(CliTest, DeletingTheKeyKillsTheChildAndExits75) {
  // The child ignores SIGTERM, so it takes the SIGKILL after --kill-after.
  auto run = cli({"run", "-t", "300ms", "--kill-after", "300ms", name_, "--", "sh", "-c",
                  "trap '' TERM; sleep 30 & wait; sleep 30"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  const auto deleted = std::chrono::steady_clock::now();
  server_->command({"DEL", writer_key()});
  EXPECT_EQ(run.wait(), 75);
  const auto took = std::chrono::steady_clock::now() - deleted;
  EXPECT_LT(took, 100ms + 300ms + 1500ms);  // ttl/3 + kill-after + a margin for a loaded machine
  EXPECT_NE(run.err().find("lost the lease on '" + name_ + "'"), std::string::npos) << run.err();
}

// True while `pid` runs (a zombie has ended).
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return false;
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto state = stat.rfind(") ");
  return state == std::string::npos || stat.substr(state + 2, 1) != "Z";
}

TEST_F(CliTest, ALostLeaseKillsWhatTheCommandLeftInItsGroupAfterTheCommandEndedAtSigterm) {
  // The command dies at SIGTERM; the process it started ignores SIGTERM (it says its pid only
  // once it does), so only the SIGKILL after --kill-after stops it.
  const std::string pid_file = file(".grandchild");
  auto run = cli({"run", "-t", "300ms", "--kill-after", "300ms", name_, "--", "sh", "-c",
                  "sh -c 'trap \"\" TERM; echo $$ > " + pid_file + "; exec sleep 60' & wait"});
  pid_t grandchild = 0;
  ASSERT_TRUE(eventually([&] {
    const std::string text = read_file(pid_file);
    if (text.empty() || text.back() != '\n')
      return false;
    grandchild = std::stoi(text);
    return true;
  }));
  ASSERT_TRUE(exists(writer_key()));
  const auto deleted = std::chrono::steady_clock::now();
  server_->command({"DEL", writer_key()});
  EXPECT_EQ(run.wait(), 75) << run.err();
  const auto took = std::chrono::steady_clock::now() - deleted;
  const bool survived = running(grandchild);
  EXPECT_FALSE(survived) << "leasehold exited while its command's process group still ran";
  EXPECT_LT(took, 100ms + 300ms + 1500ms);  // ttl/3 + kill-after + a margin for a loaded machine
  EXPECT_NE(run.err().find("lost the lease on '" + name_ + "'"), std::string::npos) << run.err();
  if (survived)
    ::kill(grandchild, SIGKILL);
}

TEST_F(CliTest, SignalsAreForwardedAndTheLeaseIsReleasedAfterwards) {
  const std::string marker = file(".got");
  auto run =
      cli({"run", name_, "--", "sh", "-c",
           "trap 'echo $1 > " + marker + "; exit 0' HUP; trap 'echo term >> " + marker +
               "; exit 7' TERM; echo ready > " + marker + ".ready; while :; do sleep 0.05; done"});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(marker + ".ready"); }));
  run.signal(SIGTERM);
  EXPECT_EQ(run.wait(), 7);
  EXPECT_NE(read_file(marker).find("term"), std::string::npos);
  EXPECT_FALSE(exists(writer_key()));
}

TEST_F(CliTest, ACommandThatDoesNotExistExits127WithTheLeaseReleased) {
  auto run = cli({"run", name_, "--", "no-such-command-anywhere"});
  EXPECT_EQ(run.wait(), 127);
  EXPECT_NE(run.err().find("no-such-command-anywhere: command not found"), std::string::npos);
  EXPECT_FALSE(exists(writer_key()));
  const std::string plain_file = file(".not-executable");  // exists, mode 0644
  std::ofstream(plain_file) << "not a program\n";
  auto not_executable = cli({"run", name_, "--", plain_file});
  EXPECT_EQ(not_executable.wait(), 126);
}

TEST_F(CliTest, BadDurationsAndUsageAre64) {
  for (const auto& bad : {"5x", "1.2.3s", "s", "-1s", "10", ""}) {
    auto run = cli({"run", "-t", bad, name_, "--", "true"});
    EXPECT_EQ(run.wait(), 64) << bad;
  }
  auto run = cli({"run", "-t", "1.5s", "-w", "250ms", name_, "--", "true"});
  EXPECT_EQ(run.wait(), 0);
  auto no_command = cli({"run", name_});
  EXPECT_EQ(no_command.wait(), 64);
  auto both = cli({"run", "-x", "-s", name_, "--", "true"});
  EXPECT_EQ(both.wait(), 64);
  auto cron_lease = cli({"cron", "--every", "1s", "--lease", "1s", name_, "--", "true"});
  EXPECT_EQ(cron_lease.wait(), 64);
  EXPECT_NE(cron_lease.err().find("must be shorter than --every"), std::string::npos);
  auto unknown = cli({"frobnicate"});
  EXPECT_EQ(unknown.wait(), 64);
}

TEST_F(CliTest, RedisDownIs69WithAOneLineReason) {
  const int port = testing::free_port();
  Cli run({"--redis", "redis://127.0.0.1:" + std::to_string(port), "run", name_, "--", "true"},
          server_->dir());
  EXPECT_EQ(run.wait(), 69);
  const std::string err = run.err();
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(CliTest, AWrongPasswordIs69) {
  RedisServer locked(RedisServer::Options{{"--requirepass", "right"}});
  Cli run({"--redis", "unix://:wrong@" + locked.socket_path(), "status", name_}, locked.dir());
  EXPECT_EQ(run.wait(), 69);
  EXPECT_NE(run.err().find("WRONGPASS"), std::string::npos) << run.err();
}

TEST_F(CliTest, RunsOverTlsWithTheCertificateFlagsAndSaysWhatIsWrongWithThem) {
  const testing::TestCertificates certificates;
  const int tls_port = testing::free_port();
  RedisServer tls(RedisServer::Options{certificates.server_args(tls_port, true)});
  const std::string url = "rediss://127.0.0.1:" + std::to_string(tls_port);
  Cli run({"--redis", url, "--tls-ca-file", certificates.ca_file(), "--tls-cert-file",
           certificates.client_cert(), "--tls-key-file", certificates.client_key(), "run", name_,
           "--", "sh", "-c", "echo \"$LEASEHOLD_NAME\""},
          tls.dir());
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(run.out(), name_ + "\n");
  EXPECT_EQ(tls.command({"EXISTS", writer_key()}).integer, 0) << "released when the command ended";
  EXPECT_EQ(
      tls.command({"EXISTS", RwLock<std::string>{"run", 1s}.server_fence_counter_key()}).integer, 1)
      << "the fence counter of the lease is on the TLS server";

  // A CA file that does not exist is a usage error that names it.
  Cli missing({"--redis", url, "--tls-ca-file", "/nonexistent/ca.pem", "run", name_, "--", "true"},
              tls.dir());
  EXPECT_EQ(missing.wait(), 64);
  EXPECT_NE(missing.err().find("/nonexistent/ca.pem"), std::string::npos) << missing.err();

  // A certificate the client does not trust: Redis is unavailable, and the reason says why.
  Cli distrusted({"--redis", url, "--tls-ca-file", certificates.other_ca_file(), "--tls-cert-file",
                  certificates.client_cert(), "--tls-key-file", certificates.client_key(), "run",
                  name_, "--", "true"},
                 tls.dir());
  EXPECT_EQ(distrusted.wait(), 69);
  EXPECT_NE(distrusted.err().find("certificate"), std::string::npos) << distrusted.err();
}

TEST_F(CliTest, TheRedisUrlComesFromTheEnvironmentWhenNotGiven) {
  ::setenv("LEASEHOLD_REDIS_URL", server_->unix_url().c_str(), 1);
  Cli run({"run", name_, "--", "true"}, server_->dir());
  EXPECT_EQ(run.wait(), 0);
  ::unsetenv("LEASEHOLD_REDIS_URL");
}

TEST_F(CliTest, SigintAndSighupAreForwardedToo) {
  for (const int signal : {SIGINT, SIGHUP}) {
    const std::string marker = file(".sig" + std::to_string(signal));
    auto run = cli({"run", name_, "--", "sh", "-c",
                    "trap 'echo got > " + marker + "; exit 5' INT HUP; touch " + marker +
                        ".ready; while :; do sleep 0.05; done"});
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(marker + ".ready"); }));
    run.signal(signal);
    EXPECT_EQ(run.wait(), 5) << signal;
    EXPECT_EQ(read_file(marker), "got\n") << signal;
    EXPECT_FALSE(exists(writer_key()));
  }
}

TEST_F(CliTest, HelpAndVersion) {
  for (const auto& command : {"run", "cron", "status", "list", "release"}) {
    auto help = cli({command, "--help"});
    EXPECT_EQ(help.wait(), 0) << command;
    EXPECT_NE(help.out().find("Usage:"), std::string::npos) << command;
  }
  auto version = cli({"--version"});
  EXPECT_EQ(version.wait(), 0);
  EXPECT_EQ(version.out(), std::string("leasehold ") + leasehold::version + "\n");
}

// docs/cli.md is the manual: every command and option that --help shows is documented there.
TEST_F(CliTest, TheManualDocumentsEveryOptionTheHelpShows) {
  const std::string manual =
      read_file(std::string(testing::build_paths::source_dir) + "/docs/cli.md");
  ASSERT_FALSE(manual.empty());
  for (const auto& command :
       {"", "run", "acquire", "hold", "extend", "cron", "status", "list", "release"}) {
    std::vector<std::string> args;
    if (*command != '\0')
      args.push_back(command);
    args.push_back("--help");
    auto help = cli(args);
    ASSERT_EQ(help.wait(), 0);
    std::istringstream words(help.out());
    for (std::string word; words >> word;) {
      // Option names: "-x,--exclusive", "--ttl", ...; each one must be in the manual.
      if (word.size() < 2 || word[0] != '-' || word == "--help" || word == "-h,--help")
        continue;
      std::istringstream names(word);
      for (std::string name; std::getline(names, name, ',');) {
        while (!name.empty() && (name.back() == ')' || name.back() == '.'))
          name.pop_back();
        if (name.size() < 2 || name[0] != '-' || name == "--")
          continue;
        EXPECT_NE(manual.find(name), std::string::npos)
            << "'" << name << "' of '" << command << " --help' is not in docs/cli.md";
      }
    }
    if (*command != '\0') {
      EXPECT_NE(manual.find(std::string("leasehold ") + command), std::string::npos) << command;
    }
  }
}

}  // namespace
}  // namespace leasehold
