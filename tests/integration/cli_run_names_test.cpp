// leasehold run NAME... -- COMMAND: several names as one exclusive lease, with the real binary,
// a real redis-server and real child processes.
#include <gtest/gtest.h>

#include <signal.h>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "eventually.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::Cli;
using cli_testing::CliTest;
using testing::eventually;

class CliRunNamesTest : public CliTest {
 protected:
  std::string writer(const std::string& name) const {
    return "leasehold:RwLock:{run:" + name + "}:w";
  }
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }
  // cli(args), on the heap, for a vector of runs.
  std::unique_ptr<Cli> start(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--redis", server_->unix_url()});
    return std::make_unique<Cli>(std::move(args), server_->dir());
  }
};

TEST_F(CliRunNamesTest, RunsTheCommandHoldingEveryNameAsOneLeaseWithAFenceEach) {
  const std::string a = name_ + "a", b = name_ + "b", c = name_ + "c";
  // A fence of b's own first: the set's fence of b comes after it.
  auto before = cli({"run", b, "--", "sh", "-c", "echo \"$LEASEHOLD_FENCE\""});
  ASSERT_EQ(before.wait(), 0);
  const std::string started = file("started");
  auto run = cli({"run", a, b, c, a, "--", "sh", "-c",
                  "echo \"$LEASEHOLD_NAME|$LEASEHOLD_FENCE|$LEASEHOLD_FENCES\"; : > " + started +
                      "; sleep 30"});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(started); }, 10s));
  // Every name holds the one lease.
  const std::string value = get(writer(a));
  ASSERT_FALSE(value.empty());
  EXPECT_EQ(get(writer(b)), value);
  EXPECT_EQ(get(writer(c)), value);
  auto status = cli({"status", "--json", b});
  EXPECT_EQ(status.wait(), 0);
  EXPECT_NE(status.out().find(value.substr(0, 8)), std::string::npos) << status.out();
  run.signal(SIGTERM);
  EXPECT_EQ(run.wait(), 143);
  for (const std::string& name : {a, b, c})
    EXPECT_FALSE(exists(writer(name))) << name << ": released with the others";

  // LEASEHOLD_NAME lists the names as given (without repeats), LEASEHOLD_FENCE is the first
  // one's, LEASEHOLD_FENCES every name=fence pair.
  const std::string out = run.out();
  const auto bar = out.find('|'), second_bar = out.find('|', bar + 1);
  ASSERT_NE(second_bar, std::string::npos) << out;
  EXPECT_EQ(out.substr(0, bar), a + " " + b + " " + c);
  const std::string fence = out.substr(bar + 1, second_bar - bar - 1);
  const std::string fences = out.substr(second_bar + 1, out.size() - second_bar - 2);
  EXPECT_EQ(fences.substr(0, a.size() + 1 + fence.size() + 1), a + "=" + fence + " ") << fences;
  const auto b_at = fences.find(" " + b + "=");
  ASSERT_NE(b_at, std::string::npos) << fences;
  const std::string b_fence =
      fences.substr(b_at + b.size() + 2, fences.find(' ', b_at + 1) - (b_at + b.size() + 2));
  EXPECT_GT(std::stoull(b_fence), std::stoull(before.out())) << fences;
  EXPECT_NE(fences.find(" " + c + "="), std::string::npos) << fences;
}

TEST_F(CliRunNamesTest, ABusyNameKeepsTheWholeRunOutAndTakesNothing) {
  const std::string a = name_ + "a", b = name_ + "b";
  const std::string started = file("started");
  auto holder = cli({"run", b, "--", "sh", "-c", ": > " + started + "; sleep 30"});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(started); }, 10s));
  auto refused = cli({"run", "-n", a, b, "--", "true"});
  EXPECT_EQ(refused.wait(), 1);
  EXPECT_FALSE(exists(writer(a))) << "nothing taken";
  // Waiting: it holds nothing while it waits, and runs once b is free.
  const std::string ran = file("ran");
  auto waiting = cli({"run", "--wait", "20s", a, b, "--", "sh", "-c", ": > " + ran});
  ASSERT_TRUE(eventually(
      [&] {
        return server_->command({"ZCARD", writer(b) + ":queue"}).integer == 1;
      },
      10s));
  EXPECT_FALSE(exists(writer(a))) << "a waiting run holds no name";
  holder.signal(SIGTERM);
  EXPECT_EQ(holder.wait(), 143);
  EXPECT_EQ(waiting.wait(), 0);
  EXPECT_TRUE(std::filesystem::exists(ran));
  EXPECT_FALSE(exists(writer(a)));
  EXPECT_FALSE(exists(writer(b)));
}

// Runs that name overlapping sets in opposite orders all run, one at a time on each name: each
// command takes a directory per name as it starts and gives it back as it ends, and must find
// them free.
TEST_F(CliRunNamesTest, RunsOfOverlappingNamesInOppositeOrdersNeverDeadlockNorOverlap) {
  const std::string a = name_ + "a", b = name_ + "b", c = name_ + "c";
  const std::string dir = server_->dir() + "/" + name_;
  const auto section = [&](const std::vector<std::string>& names) {
    std::string take, give;
    for (const std::string& name : names) {
      take += "mkdir " + dir + "." + name + " || exit 9; ";
      give += "rmdir " + dir + "." + name + "; ";
    }
    return take + "sleep 0.05; " + give;
  };
  std::vector<std::unique_ptr<Cli>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(start({"run", "--wait", "60s", a, b, "--", "sh", "-c", section({a, b})}));
    runs.push_back(start({"run", "--wait", "60s", b, a, "--", "sh", "-c", section({a, b})}));
    runs.push_back(start({"run", "--wait", "60s", c, b, "--", "sh", "-c", section({b, c})}));
  }
  for (auto& run : runs)
    EXPECT_EQ(run->wait(60s), 0) << run->err();
}

TEST_F(CliRunNamesTest, SeveralNamesTakeOnlyAnExclusiveLease) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--shared"}, std::vector<std::string>{"--limit", "2"}}) {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {name_ + "a", name_ + "b", "--", "true"});
    auto run = cli(args);
    EXPECT_EQ(run.wait(), 64) << flags.front();
    EXPECT_NE(run.err().find("several NAMEs"), std::string::npos) << run.err();
  }
  // Options of COMMAND after "--" are COMMAND's, not leasehold's.
  auto run = cli({"run", name_ + "a", name_ + "b", "--", "sh", "-c", "echo $0", "--version"});
  EXPECT_EQ(run.wait(), 0);
  EXPECT_EQ(run.out(), "--version\n");
}

}  // namespace
}  // namespace leasehold
