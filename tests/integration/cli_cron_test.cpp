// leasehold cron's runs under their lease: a run past --max-time is stopped (SIGTERM, then
// SIGKILL after --kill-after) and a run whose lease is lost is stopped; the real binary, a real
// redis-server, real child processes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::eventually;

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

}  // namespace
}  // namespace leasehold
