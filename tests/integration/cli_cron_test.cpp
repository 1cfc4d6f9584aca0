// leasehold cron: several processes run each interval at most once, in each mode; a run past
// --max-time is stopped (SIGTERM, then SIGKILL after --kill-after), a run whose lease is lost is
// stopped, and SIGTERM waits for the run in progress; the real binary, a real redis-server, real
// child processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "cli_fixture.hpp"
#include "eventually.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::Cli;
using cli_testing::CliTest;
using testing::ChildProcess;
using testing::eventually;
using testing::read_file;

class CliCronTest : public testing::SharedServerTest {
 protected:
  void SetUp() override { name_ = "cron" + std::to_string(unique_number()); }

  std::vector<std::string> cli_args(std::vector<std::string> args) const {
    args.insert(args.begin(), {testing::build_paths::cli, "--redis", server_->unix_url()});
    return args;
  }
  std::string cron_key() const { return "leasehold:Lock:cron:" + name_; }
  std::string file(const std::string& what) const { return server_->dir() + "/" + name_ + what; }

  std::string name_;
};

TEST_F(CliCronTest, ARunPastMaxTimeIsTerminatedThenKilled) {
  const std::string started = file(".started");
  // It ignores SIGTERM (and so does its sleep): only the SIGKILL ends it.
  ChildProcess cron(
      cli_args({"cron", "--every", "20s", "--max-time", "300ms", "--kill-after", "200ms", "--ticks",
                "1", name_, "--", "sh", "-c", "trap '' TERM; touch " + started + "; sleep 30"}),
      server_->dir());
  EXPECT_EQ(cron.wait(15s), 0) << cron.err();
  EXPECT_TRUE(std::filesystem::exists(started)) << "the run started";
  EXPECT_GE(cron.took(), 500ms) << "--max-time, then --kill-after";
  EXPECT_LT(cron.took(), 10s) << "not the command's 30 s";
  EXPECT_NE(cron.err().find("ran past --max-time 300 ms; killed"), std::string::npos) << cron.err();
}

TEST_F(CliCronTest, ARunThatEndsInTimeIsNotStopped) {
  ChildProcess cron(cli_args({"cron", "--every", "20s", "--max-time", "10s", "--ticks", "1", name_,
                              "--", "sh", "-c", "exit 3"}),
                    server_->dir());
  EXPECT_EQ(cron.wait(15s), 0) << cron.err();
  EXPECT_EQ(cron.err().find("--max-time"), std::string::npos) << cron.err();
  EXPECT_NE(cron.err().find("ran, exit 3"), std::string::npos) << cron.err();
}

TEST_F(CliCronTest, ARunWhoseLeaseIsLostIsTerminated) {
  // A 1 s lease extended while the run lasts; force-releasing it loses it.
  ChildProcess cron(cli_args({"cron", "--every", "20s", "--lease", "1s", "--ticks", "1", name_,
                              "--", "sleep", "30"}),
                    server_->dir());
  ASSERT_TRUE(eventually(
      [&] {
        return server_->command({"EXISTS", cron_key()}).integer == 1;
      },
      10s))
      << cron.err();
  ChildProcess release(cli_args({"release", "--force", name_}), server_->dir());
  ASSERT_EQ(release.wait(), 0) << release.err();
  EXPECT_EQ(cron.wait(15s), 0) << cron.err();
  EXPECT_LT(cron.took(), 12s) << "not the command's 30 s";
  EXPECT_NE(cron.err().find("its lease was lost"), std::string::npos) << cron.err();
  EXPECT_NE(cron.err().find("terminated"), std::string::npos) << cron.err();
}

TEST_F(CliCronTest, AnAlignedJobTakesAShortIntervalWithoutALease) {
  ChildProcess cron(cli_args({"cron", "--aligned", "--every", "1s", "--ticks", "1", name_, "--",
                              "sh", "-c", "echo $LEASEHOLD_SLOT"}),
                    server_->dir());
  EXPECT_EQ(cron.wait(15s), 0) << cron.err();
  EXPECT_FALSE(cron.out().empty()) << "the run got its slot";
  ChildProcess plain(cli_args({"cron", "--every", "1s", "--ticks", "1", name_, "--", "true"}),
                     server_->dir());
  EXPECT_EQ(plain.wait(15s), 64) << "a plain job's default lease does not fit in 1 s";
  EXPECT_NE(plain.err().find("give --lease"), std::string::npos) << plain.err();
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

}  // namespace
}  // namespace leasehold
