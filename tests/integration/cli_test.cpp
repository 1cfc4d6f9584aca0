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
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"
#include "test_certificates.hpp"

extern char** environ;

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

using testing::read_file;

// A command that ends when `path` exists, or after 30 s: a test that fails before it creates the
// file leaves no command polling for ever (a killed leasehold's command is in its own group).
std::string until_exists(const std::string& path) {
  return "i=0; while [ ! -e " + path + " ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done";
}

// Whether `text` (output of the command) holds a byte that drives a terminal: a C0 control but the
// line feed that ends a line (ESC, BEL, CR, backspace, ...), DEL, a C1 control (CSI is 0x9b, or
// "\xc2\x9b" in UTF-8), or 0xff, which no UTF-8 holds.
::testing::AssertionResult shows_no_control(const std::string& text) {
  for (std::size_t at = 0; at < text.size(); ++at) {
    const auto byte = static_cast<unsigned char>(text[at]);
    const auto next = at + 1 < text.size() ? static_cast<unsigned char>(text[at + 1]) : 0;
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f || byte == 0x9b || byte == 0xff ||
        (byte == 0xc2 && next >= 0x80 && next < 0xa0))
      return ::testing::AssertionFailure()
             << "byte " << int{byte} << " at " << at << " of: " << text;
  }
  return ::testing::AssertionSuccess();
}

// A holder's field as a lease's value stores it (holder.hpp): every byte but letters and digits
// %-escaped.
std::string stored_field(const std::string& text) {
  std::string stored;
  for (const char c : text) {
    char escaped[4];
    std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
    stored += std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c) : escaped;
  }
  return stored;
}

// One run of the leasehold binary.
class Cli : public testing::ChildProcess {
 public:
  Cli(std::vector<std::string> args, const std::string& dir, Input input = Input::null)
      : ChildProcess(with_program(std::move(args)), dir, input) {}

 private:
  static std::vector<std::string> with_program(std::vector<std::string> args) {
    args.insert(args.begin(), testing::build_paths::cli);
    return args;
  }
};

class CliTest : public testing::SharedServerTest {
 protected:
  void SetUp() override {
    const std::string number = std::to_string(unique_number());
    name_ = "job" + number;
    prefix_ = "ops" + number;  // a prefix of this test's own, for list's whole-prefix scans
  }

  // leasehold --redis <server> ARGS...
  Cli cli(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--redis", server_->unix_url()});
    return Cli(std::move(args), server_->dir());
  }
  std::string file(const std::string& what) const { return server_->dir() + "/" + name_ + what; }
  std::string writer_key() const { return "leasehold:RwLock:{run:" + name_ + "}:w"; }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }

  std::string name_;
  std::string prefix_;
};

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
  EXPECT_EQ(std::stoull(second.out()), std::stoull(first.out()) + 1) << first.out() << second.out();
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
  EXPECT_EQ(tls.command({"EXISTS", writer_key().substr(0, writer_key().size() - 1) + "f"}).integer,
            1)
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

TEST_F(CliTest, StatusListAndForcedReleaseShowAndRemoveLeases) {
  auto holder = cli({"--prefix", prefix_, "run", "-t", "300ms", name_, "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":RwLock:{run:" + name_ + "}:w"); }));
  auto status = cli({"--prefix", prefix_, "status", name_, "nobody"});
  EXPECT_EQ(status.wait(), 0);
  EXPECT_NE(status.out().find(name_ + ": held exclusively by "), std::string::npos) << status.out();
  EXPECT_NE(status.out().find("nobody: free"), std::string::npos);
  auto json = cli({"--prefix", prefix_, "status", "--json", name_});
  EXPECT_EQ(json.wait(), 0);
  EXPECT_NE(json.out().find("\"state\":\"exclusive\""), std::string::npos) << json.out();
  auto list = cli({"--prefix", prefix_, "list", "--json"});
  EXPECT_EQ(list.wait(), 0);
  EXPECT_NE(list.out().find("\"name\":\"" + name_ + "\""), std::string::npos) << list.out();
  auto filtered = cli({"--prefix", prefix_, "list", "nomatch*"});
  EXPECT_EQ(filtered.wait(), 0);
  EXPECT_EQ(filtered.out().find(name_), std::string::npos);
  auto refuse = cli({"--prefix", prefix_, "release", name_});
  EXPECT_EQ(refuse.wait(), 64) << "release needs --force";
  auto release = cli({"--prefix", prefix_, "release", "--force", name_});
  EXPECT_EQ(release.wait(), 0);
  EXPECT_NE(release.out().find("removed the exclusive lease"), std::string::npos) << release.out();
  EXPECT_EQ(holder.wait(), 75) << "its lease was removed behind its back";
}

// status --json is JSON whatever the name holds: quotes and backslashes escaped, bytes that are
// not UTF-8 replaced (U+FFFD), every field there for a free name.
TEST_F(CliTest, StatusJsonParsesForAnyName) {
  const std::string quoted = name_ + "\"q\\";
  const std::string not_utf8 = name_ + "\xff";
  auto status = cli({"status", "--json", quoted, not_utf8});
  ASSERT_EQ(status.wait(), 0) << status.err();
  const nlohmann::json parsed = nlohmann::json::parse(status.out());
  ASSERT_EQ(parsed.size(), 2u) << status.out();
  EXPECT_EQ(parsed[0]["name"], quoted);
  EXPECT_EQ(parsed[0]["state"], "free");
  EXPECT_TRUE(parsed[0]["writer"].is_null());
  EXPECT_TRUE(parsed[0]["readers"].empty());
  EXPECT_EQ(parsed[0]["permits"]["count"], 0);
  EXPECT_EQ(parsed[1]["name"], name_ + "\xef\xbf\xbd");
}

// Names, holders' hosts and labels, and another client's value can hold any bytes (any client can
// write a key): list, status, the refusal of a take that names the holder and release --force show
// their control characters and malformed UTF-8 as '?', and nothing else of them changes; --json
// gives them exactly, escaped.
TEST_F(CliTest, NamesAndHoldersAreShownWithoutTheirControlCharacters) {
  const std::string name = name_ + "-\x1b]0;owned\x07-\xc2\x9b[31m-\r\b_end";
  const std::string shown_name = name_ + "-?]0;owned?-?[31m-??_end";
  const std::string host = "web-\x1b[2J\xc2\x85-3";
  const std::string label = "deploy \x1b]0;pwned\x07\x9b[2J\r\bok\xff";
  const std::string shown_lease =
      "0123abcd\xe2\x80\xa6 (web-?[2J?-3, pid 4242, \"deploy ?]0;pwned??[2J??ok?\", for ";
  const long long now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::string value = "0123abcd0123abcd0123abcd0123abcd;" + stored_field(host) + ";4242;" +
                            stored_field(label) + ";" + std::to_string(now_ms);
  server_->command({"SET", prefix_ + ":RwLock:{run:" + name + "}:w", value, "PX", "60000"});

  auto list = cli({"--prefix", prefix_, "list"});
  ASSERT_EQ(list.wait(), 0) << list.err();
  EXPECT_TRUE(shows_no_control(list.out() + list.err()));
  EXPECT_EQ(list.out().find(shown_name + ": held exclusively by " + shown_lease), 0u) << list.out();
  auto status = cli({"--prefix", prefix_, "status", name});
  ASSERT_EQ(status.wait(), 0) << status.err();
  EXPECT_TRUE(shows_no_control(status.out() + status.err()));
  EXPECT_EQ(status.out().find(shown_name + ": held exclusively by " + shown_lease), 0u)
      << status.out();
  auto refused = cli({"--prefix", prefix_, "-v", "acquire", "-n", name});
  EXPECT_EQ(refused.wait(), 1) << refused.err();
  EXPECT_TRUE(shows_no_control(refused.out() + refused.err()));
  EXPECT_NE(refused.err().find("'" + shown_name + "' is held exclusively by " + shown_lease),
            std::string::npos)
      << refused.err();

  auto json = cli({"--prefix", prefix_, "list", "--json"});
  ASSERT_EQ(json.wait(), 0) << json.err();
  EXPECT_TRUE(shows_no_control(json.out())) << "escaped, C1 controls too";
  const nlohmann::json parsed = nlohmann::json::parse(json.out());
  ASSERT_EQ(parsed.size(), 1u) << json.out();
  EXPECT_EQ(parsed[0]["name"], name);
  EXPECT_EQ(parsed[0]["writer"]["holder"]["host"], host);
  EXPECT_EQ(parsed[0]["writer"]["holder"]["label"],
            "deploy \x1b]0;pwned\x07\xef\xbf\xbd[2J\r\bok\xef\xbf\xbd")
      << "bytes that are not UTF-8 are U+FFFD";

  auto release = cli({"--prefix", prefix_, "release", "--force", name});
  ASSERT_EQ(release.wait(), 0) << release.err();
  EXPECT_TRUE(shows_no_control(release.out() + release.err()));
  EXPECT_EQ(release.out(), shown_name + ": removed the exclusive lease 0123abcd\xe2\x80\xa6\n");
}

// What the command echoes in its errors — arguments CLI11 refuses, a bad duration, a key of
// another type, a raw key and the value another client put there — is shown the same way.
TEST_F(CliTest, WhatErrorsAndRawKeysEchoIsShownWithoutItsControlCharacters) {
  auto unknown = cli({"status", "--no-such\x1b]0;x\x07"});
  EXPECT_EQ(unknown.wait(), 64);
  EXPECT_TRUE(shows_no_control(unknown.out() + unknown.err()));
  EXPECT_NE(unknown.err().find("--no-such?]0;x?"), std::string::npos) << unknown.err();
  auto duration = cli({"acquire", "-t", "5\x1b[2J\xc2\x9bs", name_});
  EXPECT_EQ(duration.wait(), 64);
  EXPECT_TRUE(shows_no_control(duration.out() + duration.err()));
  EXPECT_NE(duration.err().find("--ttl: '5?[2J?s' is not a duration"), std::string::npos)
      << duration.err();

  const std::string other = name_ + "\x1b[2J\x9b";
  server_->command({"HSET", "leasehold:RwLock:{run:" + other + "}:w", "field", "value"});
  auto wrong_type = cli({"status", other});
  EXPECT_EQ(wrong_type.wait(), 65) << wrong_type.err();
  EXPECT_TRUE(shows_no_control(wrong_type.out() + wrong_type.err()));
  EXPECT_NE(wrong_type.err().find("leasehold:RwLock:{run:" + name_ + "?[2J?}:w holds a hash"),
            std::string::npos)
      << wrong_type.err();

  const std::string raw_key = name_ + ":raw\r\x1b[2J";
  server_->command({"SET", raw_key, "\x1b[2J\x07\x9bxyzuvw", "PX", "60000"});
  auto raw = cli({"status", "--raw-key", raw_key});
  EXPECT_EQ(raw.wait(), 0) << raw.err();
  EXPECT_TRUE(shows_no_control(raw.out() + raw.err()));
  EXPECT_EQ(raw.out().find(name_ + ":raw??[2J: held by ?[2J??xy\xe2\x80\xa6 ("), 0u) << raw.out();
}

// acquire --env writes a name with control characters as printf's octal escapes: none of them
// reaches a terminal that shows the lines, and a shell's eval still gets exactly the name.
TEST_F(CliTest, AcquireEnvGivesAShellExactlyANameWithControlCharacters) {
  const std::string name = name_ + "-\x1b]0;x\x07 '%s\\\xc2\x9b\n";
  const std::string key = "leasehold:RwLock:{run:" + name_ + "-\x1b]0;x\x07 '%25s\\\xc2\x9b\n}:w";
  auto acquire = cli({"acquire", "--env", name});
  ASSERT_EQ(acquire.wait(), 0) << acquire.err();
  EXPECT_TRUE(shows_no_control(acquire.out()));
  ASSERT_TRUE(exists(key));
  testing::ChildProcess script(
      {"sh", "-c", "eval \"$1\" && \"$2\" --redis \"$3\" release \"$LEASEHOLD_NAME\"", "sh",
       acquire.out(), testing::build_paths::cli, server_->unix_url()},
      server_->dir());
  EXPECT_EQ(script.wait(), 0) << "released by its token under its name: " << script.err();
  EXPECT_FALSE(exists(key));
}

// A name's key holding another type of value (something else wrote there) is named, with what it
// holds and the way out, and exits 65; `release --force` removes it, and the name works again.
TEST_F(CliTest, AKeyOfAnotherTypeIsNamedExits65AndReleaseForceRemovesIt) {
  server_->command({"HSET", writer_key(), "field", "value"});
  const std::string named = writer_key() + " holds a hash (leasehold keeps a string there)";
  auto status = cli({"status", name_});
  EXPECT_EQ(status.wait(), 65) << status.err();
  EXPECT_NE(status.err().find(named), std::string::npos) << status.err();
  EXPECT_NE(status.err().find("leasehold release --force " + name_), std::string::npos)
      << status.err();
  auto once = cli({"run", "-n", name_, "--", "true"});
  EXPECT_EQ(once.wait(), 65) << once.err();
  EXPECT_NE(once.err().find(named), std::string::npos) << once.err();
  auto waiting = cli({"run", name_, "--", "true"});
  EXPECT_EQ(waiting.wait(), 65) << waiting.err();
  EXPECT_NE(waiting.err().find(named), std::string::npos) << waiting.err();
  EXPECT_EQ(server_->command({"TYPE", writer_key()}).str, "hash") << "nothing was overwritten";

  auto release = cli({"release", "--force", name_});
  EXPECT_EQ(release.wait(), 0) << release.err();
  EXPECT_NE(release.out().find(name_ + ": removed " + writer_key() + ", which held a hash"),
            std::string::npos)
      << release.out();
  EXPECT_FALSE(exists(writer_key()));
  auto again = cli({"run", "-n", name_, "--", "true"});
  EXPECT_EQ(again.wait(), 0) << again.err();
}

// A cron job whose key holds another type of value fails every tick: it names the key and exits
// 65 instead of logging "could not reach Redis" forever; the same for an aligned job's slot key.
TEST_F(CliTest, ACronKeyOfAnotherTypeIsNamedAndExits65) {
  const std::string cron_key = "leasehold:Lock:cron:" + name_;
  server_->command({"HSET", cron_key, "field", "value"});
  auto cron = cli({"cron", "--every", "2s", name_, "--", "true"});
  EXPECT_EQ(cron.wait(), 65) << cron.err();
  EXPECT_NE(cron.err().find(cron_key + " holds a hash (leasehold keeps a string there)"),
            std::string::npos)
      << cron.err();
  EXPECT_EQ(cron.err().find("could not reach Redis"), std::string::npos) << cron.err();

  const std::string slot_key = "leasehold:Lock:{cron:" + name_ + "}:slot";
  server_->command({"RPUSH", slot_key, "item"});
  auto aligned = cli({"cron", "--aligned", "--every", "2s", name_, "--", "true"});
  EXPECT_EQ(aligned.wait(), 65) << aligned.err();
  EXPECT_NE(aligned.err().find(slot_key + " holds a list (leasehold keeps a string there)"),
            std::string::npos)
      << aligned.err();
  EXPECT_EQ(server_->command({"TYPE", slot_key}).str, "list") << "nothing was overwritten";
}

// --metrics-file: run writes what it did in the Prometheus format; cron rewrites the file after
// every tick, each time whole (a reader never sees a half-written file), and leaves no temporary
// file behind.
TEST_F(CliTest, MetricsFileHoldsTheRunsAndTicksAndIsAlwaysWhole) {
  const std::string run_metrics = file(".run.prom");
  auto run = cli({"run", "--metrics-file", run_metrics, name_, "--", "true"});
  ASSERT_EQ(run.wait(), 0) << run.err();
  const std::string after_run = read_file(run_metrics);
  EXPECT_NE(after_run.find("leasehold_acquires_total{outcome=\"acquired\"} 1\n"), std::string::npos)
      << after_run;
  EXPECT_NE(after_run.find("leasehold_releases_total{outcome=\"released\"} 1\n"), std::string::npos)
      << after_run;

  const std::string cron_metrics = file(".cron.prom");
  const std::string last_family = "# TYPE leasehold_cron_run_seconds histogram\n";
  auto cron = cli({"-q", "cron", "--every", "300ms", "--lease", "200ms", "--ticks", "3",
                   "--metrics-file", cron_metrics, name_, "--", "true"});
  int exit_code = -1;
  int partial_reads = 0;
  while ((exit_code = cron.wait(1ms)) == -1) {
    const std::string text = read_file(cron_metrics);
    if (!text.empty() && text.find(last_family) == std::string::npos)
      ++partial_reads;  // not written yet reads empty; anything else must be whole
  }
  EXPECT_EQ(exit_code, 0) << cron.err();
  EXPECT_EQ(partial_reads, 0);
  const std::string after_cron = read_file(cron_metrics);
  EXPECT_NE(
      after_cron.find("leasehold_cron_ticks_total{job=\"" + name_ + "\",outcome=\"ran\"} 3\n"),
      std::string::npos)
      << after_cron;
  EXPECT_NE(after_cron.find("leasehold_cron_run_seconds_count{job=\"" + name_ + "\"} 3\n"),
            std::string::npos)
      << after_cron;
  for (const auto& entry : std::filesystem::directory_iterator(server_->dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
        << "left behind: " << entry.path();
  auto unwritable =
      cli({"run", "--metrics-file", server_->dir() + "/no/such/dir/m.prom", name_, "--", "true"});
  EXPECT_EQ(unwritable.wait(), 0) << "the command runs all the same";
  EXPECT_NE(unwritable.err().find("--metrics-file"), std::string::npos) << unwritable.err();
}

// status and list say who holds a lease: host, pid, the command (its label), and since when.
TEST_F(CliTest, StatusNamesTheHoldersHostPidAndCommand) {
  auto holder = cli({"run", name_, "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto status = cli({"status", name_});
  ASSERT_EQ(status.wait(), 0) << status.err();
  const std::string expected =
      std::string(host) + ", pid " + std::to_string(holder.pid()) + ", \"sleep 10\", for ";
  EXPECT_NE(status.out().find(expected), std::string::npos) << status.out();
  auto json = cli({"status", "--json", name_});
  ASSERT_EQ(json.wait(), 0) << json.err();
  const nlohmann::json parsed = nlohmann::json::parse(json.out());
  const auto& who = parsed[0]["writer"]["holder"];
  EXPECT_EQ(who["host"], host) << json.out();
  EXPECT_EQ(who["pid"], holder.pid());
  EXPECT_EQ(who["label"], "sleep 10");
  EXPECT_GT(who["taken_at_ms"].get<long long>(), 0);
  auto list = cli({"list", name_});
  ASSERT_EQ(list.wait(), 0) << list.err();
  EXPECT_NE(list.out().find(expected), std::string::npos) << list.out();
  holder.signal(SIGTERM);
  holder.wait();
}

// --max-time: a command that runs past it is ended like one whose lease was lost (SIGTERM, then
// SIGKILL after --kill-after) and leasehold exits 124, as timeout(1) does; the lease is given back.
TEST_F(CliTest, MaxTimeEndsTheCommandAndExits124) {
  auto run = cli({"run", "--max-time", "300ms", name_, "--", "sleep", "10"});
  EXPECT_EQ(run.wait(), 124) << run.err();
  EXPECT_GE(run.took(), 300ms);
  EXPECT_LT(run.took(), 4s) << "sleep ends at SIGTERM";
  EXPECT_NE(run.err().find("--max-time"), std::string::npos) << run.err();
  EXPECT_FALSE(exists(writer_key()));

  auto stubborn = cli({"run", "--max-time", "300ms", "--kill-after", "300ms", name_, "--", "sh",
                       "-c", "trap '' TERM; sleep 10"});
  EXPECT_EQ(stubborn.wait(), 124) << stubborn.err();
  EXPECT_GE(stubborn.took(), 600ms);
  EXPECT_LT(stubborn.took(), 5s) << "SIGKILL after --kill-after";
  EXPECT_NE(stubborn.err().find("killed"), std::string::npos) << stubborn.err();

  auto quick = cli({"run", "--max-time", "5s", name_, "--", "true"});
  EXPECT_EQ(quick.wait(), 0) << "a command that ends in time is not touched";
  auto negative = cli({"run", "--max-time", "-1s", name_, "--", "true"});
  EXPECT_EQ(negative.wait(), 64);
}

// --max-time is the command's budget, not the lease's: a command stopped for it keeps its lease
// (extended) until its group is gone, so nobody else runs while it is still dying.
TEST_F(CliTest, ARunStoppedAtMaxTimeKeepsItsLeaseUntilItsGroupIsGone) {
  // A 200 ms TTL, SIGTERM (ignored) at 300 ms, SIGKILL 3 s later: unextended, the lease would
  // have run out by 500 ms.
  auto stubborn = cli({"run", "-t", "200ms", "--max-time", "300ms", "--kill-after", "3s", name_,
                       "--", "sh", "-c", "trap '' TERM; sleep 10"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  const auto started = std::chrono::steady_clock::now();
  bool refused_past_ttl = false;
  // Contenders started in the first 1.2 s are done long before the SIGKILL (3.3 s): all refused.
  while (std::chrono::steady_clock::now() - started < 1200ms) {
    auto contender = cli({"run", "-n", name_, "--", "true"});
    EXPECT_EQ(contender.wait(), 1) << "the lease of a command being stopped was taken";
    refused_past_ttl = refused_past_ttl || std::chrono::steady_clock::now() - started > 700ms;
  }
  EXPECT_TRUE(refused_past_ttl);
  EXPECT_EQ(stubborn.wait(), 124) << stubborn.err();
  EXPECT_NE(stubborn.err().find("killed"), std::string::npos) << stubborn.err();
  EXPECT_FALSE(exists(writer_key())) << "given back once the group was gone";
}

// Permits in status, list and release --force; a queue of waiters is not listed as a lease.
TEST_F(CliTest, StatusAndListShowPermitsAndNotTheQueues) {
  // Both hold until the test ends them: a holder whose command ended would let the waiter in.
  auto permit = cli({"--prefix", prefix_, "run", "--limit", "2", name_, "--", "sleep", "120"});
  auto exclusive = cli({"--prefix", prefix_, "run", name_ + "x", "--", "sleep", "120"});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":RwLock:{run:" + name_ + "x}:w"); }));
  auto waiting = cli({"--prefix", prefix_, "run", name_ + "x", "--", "true"});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":RwLock:{run:" + name_ + "x}:w:queue"); }));
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":Semaphore:{run:" + name_ + "}:h"); }));
  auto status = cli({"--prefix", prefix_, "status", name_});
  EXPECT_EQ(status.wait(), 0);
  EXPECT_NE(status.out().find(name_ + ": 1 of 2 permits held: "), std::string::npos)
      << status.out();
  auto json = cli({"--prefix", prefix_, "status", "--json", name_});
  EXPECT_EQ(json.wait(), 0);
  EXPECT_NE(json.out().find("\"permits\":{\"count\":2,\"holders\":[{"), std::string::npos)
      << json.out();
  auto list = cli({"--prefix", prefix_, "list"});
  EXPECT_EQ(list.wait(), 0);
  EXPECT_NE(list.out().find(name_ + ": 1 of 2 permits held"), std::string::npos) << list.out();
  EXPECT_NE(list.out().find(name_ + "x: held exclusively"), std::string::npos) << list.out();
  EXPECT_EQ(list.out().find("queue"), std::string::npos) << "a queue listed as a lease";
  auto release = cli({"--prefix", prefix_, "release", "--force", name_});
  EXPECT_EQ(release.wait(), 0);
  EXPECT_NE(release.out().find("1 permit(s)"), std::string::npos) << release.out();
  EXPECT_EQ(permit.wait(), 75) << "its permit was removed behind its back";
  waiting.signal(SIGTERM);
  EXPECT_EQ(waiting.wait(), 128 + SIGTERM);
  exclusive.signal(SIGTERM);
  exclusive.wait();
}

TEST_F(CliTest, ThreeCronProcessesRunEachIntervalAtMostOnce) {
  const std::string log = file(".cron");
  const std::string child = "date +%s%3N >> " + log;
  std::vector<std::unique_ptr<Cli>> hosts;
  for (int host = 0; host < 3; ++host) {
    hosts.push_back(std::make_unique<Cli>(
        std::vector<std::string>{"--redis", server_->unix_url(), "cron", "--every", "400ms",
                                 "--lease", "300ms", "--ticks", "10", name_, "--", "sh", "-c",
                                 child},
        server_->dir()));
    std::this_thread::sleep_for(130ms);  // hosts start at different moments
  }
  for (auto& host : hosts)
    EXPECT_EQ(host->wait(), 0) << host->err();
  std::vector<long long> runs;
  std::ifstream in(log);
  for (long long t; in >> t;)
    runs.push_back(t);
  std::sort(runs.begin(), runs.end());
  ASSERT_GE(runs.size(), 8u);
  for (std::size_t i = 1; i < runs.size(); ++i)
    EXPECT_GE(runs[i] - runs[i - 1], 250) << "two hosts ran one interval";
  std::size_t skipped = 0;
  for (auto& host : hosts) {
    const std::string err = host->err();
    for (auto at = err.find("skipped"); at != std::string::npos; at = err.find("skipped", at + 1))
      ++skipped;
    EXPECT_NE(err.find("tick 1: "), std::string::npos) << err;
  }
  EXPECT_GE(skipped, 10u) << "every tick logs ran or skipped";
}

TEST_F(CliTest, CronModesAlignedAndQuiet) {
  const std::string log = file(".modes");
  for (const auto& mode : {"at-least", "after-finish", "after-start"}) {
    auto cron = cli({"-q", "cron", "--mode", mode, "--aligned", "--every", "300ms", "--lease",
                     "200ms", "--ticks", "2", name_ + mode, "--", "sh", "-c",
                     "echo " + std::string(mode) + " slot=$LEASEHOLD_SLOT >> " + log});
    EXPECT_EQ(cron.wait(), 0) << mode << ": " << cron.err();
    EXPECT_EQ(cron.err(), "") << "--quiet prints nothing but errors";
  }
  const std::string runs = read_file(log);
  for (const auto& mode : {"at-least", "after-finish", "after-start"}) {
    // Each run is told its server-time slot, and no slot ran twice.
    std::size_t lines = 0;
    for (auto at = runs.find(mode); at != std::string::npos; at = runs.find(mode, at + 1))
      ++lines;
    const std::regex run_line(std::string(mode) + " slot=([0-9]+)\n");
    std::set<std::string> slots;
    for (std::sregex_iterator it(runs.begin(), runs.end(), run_line), end; it != end; ++it)
      slots.insert((*it)[1]);
    EXPECT_GE(lines, 1u) << mode << " never ran";
    EXPECT_EQ(slots.size(), lines) << mode << ": " << runs;
  }
  auto bad = cli({"cron", "--mode", "sometimes", "--every", "1s", name_, "--", "true"});
  EXPECT_EQ(bad.wait(), 64);
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

TEST_F(CliTest, CronStopsOnSigtermAndWaitsForTheRunInProgress) {
  const std::string marker = file(".cronrun");
  auto cron = cli({"cron", "--every", "5s", "--lease", "4s", name_, "--", "sh", "-c",
                   "trap 'echo stopped > " + marker + "; exit 0' TERM; echo running > " + marker +
                       "; while :; do sleep 0.05; done"});
  ASSERT_TRUE(eventually([&] { return read_file(marker) == "running\n"; }));
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0);
  EXPECT_EQ(read_file(marker), "stopped\n") << "the run did not get the signal";
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
