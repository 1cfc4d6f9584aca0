// leasehold fence check against a real redis-server: exit 0 for the newest fence or an equal one
// (recorded), 1 for an older one (naming both), 64 for a FENCE that is not a non-negative
// integer, 65 for a record that holds something else; --json prints the verdict's fields; a run
// stalled past its lease is refused once a newer holder checked.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_fixture.hpp"
#include "eventually.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::CliTest;
using testing::eventually;

using CliFenceTest = CliTest;

TEST_F(CliFenceTest, TheNewestOrAnEqualFencePassesAndAnOlderOneIsRefusedNamingBoth) {
  auto first = cli({"fence", "check", name_, "12"});
  EXPECT_EQ(first.wait(), 0);
  EXPECT_EQ(first.out(), "'" + name_ + "': fence 12 is the newest; recorded\n");
  auto equal = cli({"fence", "check", name_, "12"});
  EXPECT_EQ(equal.wait(), 0) << equal.err();
  auto older = cli({"fence", "check", name_, "9"});
  EXPECT_EQ(older.wait(), 1);
  EXPECT_NE(older.out().find("fence 9 is older than 12"), std::string::npos) << older.out();
  auto newer = cli({"fence", "check", name_, "13"});
  EXPECT_EQ(newer.wait(), 0);
  EXPECT_EQ(server_->command({"GET", "leasehold:Fence:" + name_}).str, "13");
}

TEST_F(CliFenceTest, JsonHoldsTheVerdictsFields) {
  ASSERT_EQ(cli({"fence", "check", name_, "20"}).wait(), 0);
  auto older = cli({"fence", "check", "--json", name_, "19"});
  EXPECT_EQ(older.wait(), 1);
  const auto json = nlohmann::json::parse(older.out());
  EXPECT_EQ(json["resource"], name_);
  EXPECT_EQ(json["fence"], 19);
  EXPECT_EQ(json["newest"], 20);
  EXPECT_EQ(json["accepted"], false);
}

TEST_F(CliFenceTest, AFenceThatIsNotANonNegativeIntegerIsAUsageError) {
  for (const std::string bad : {"-1", "1.5", "x", "", "+3", "18446744073709551616", "7 "}) {
    auto check = cli({"fence", "check", name_, bad});
    EXPECT_EQ(check.wait(), 64) << bad;
    EXPECT_NE(check.err().find("non-negative integer"), std::string::npos) << check.err();
  }
  EXPECT_EQ(server_->command({"EXISTS", "leasehold:Fence:" + name_}).integer, 0);
}

// A holder stalled for real: a `leasehold run` and its command are stopped (SIGSTOP) past the
// lease; another run takes the name and its command's fence check passes with its newer fence;
// the first resumes, and its command's check, with the fence its lease was granted, is refused.
TEST_F(CliFenceTest, AStalledRunsCheckIsRefusedOnceANewerHolderActed) {
  const std::string ready = file("-ready");
  const std::string go = file("-go");
  const std::string result = file("-result");
  const std::string check = std::string(testing::build_paths::cli) + " --redis " +
                            server_->unix_url() + " fence check " + name_ + " $LEASEHOLD_FENCE";
  // The command ignores SIGTERM (and so does its check): it finishes after the loss is noticed.
  auto stale =
      cli({"run", "-t", "500ms", "--kill-after", "10s", name_, "--", "sh", "-c",
           "trap '' TERM; echo $$ > " + ready + ".tmp; mv " + ready + ".tmp " + ready + "; " +
               cli_testing::until_exists(go) + "; " + check + "; echo $? > " + result});
  ASSERT_TRUE(eventually([&] { return !testing::read_file(ready).empty(); }));
  const pid_t command = std::stoi(testing::read_file(ready));
  ::kill(-command, SIGSTOP);
  stale.signal(SIGSTOP);
  ASSERT_TRUE(eventually([&] { return !exists(writer_key()); }, 3s)) << "the lease ran out";
  auto fresh = cli({"run", name_, "--", "sh", "-c", check});
  EXPECT_EQ(fresh.wait(), 0) << fresh.out() << fresh.err();
  std::ofstream{go};
  ::kill(-command, SIGCONT);
  stale.signal(SIGCONT);
  EXPECT_EQ(stale.wait(), 75) << "the lost lease is noticed";
  EXPECT_EQ(testing::read_file(result), "1\n") << "the stale check was refused";
  EXPECT_NE(stale.out().find("is older than"), std::string::npos) << stale.out();
}

TEST_F(CliFenceTest, ARecordHoldingSomethingElseIsNamedAndExits65) {
  server_->command({"HSET", "leasehold:Fence:" + name_, "a", "b"});
  auto check = cli({"fence", "check", name_, "1"});
  EXPECT_EQ(check.wait(), 65);
  EXPECT_NE(check.err().find("leasehold:Fence:" + name_), std::string::npos) << check.err();
}

}  // namespace
}  // namespace leasehold
