// leasehold elect and leasehold leader against a real redis-server: COMMAND runs only while its
// elect leads, with its term and name; the status file exists exactly while leading; a second
// elect waits and leads with a larger term; --rejoin stands again; a forced release deposes the
// leader (exit 75); signals reach the command; leader shows who leads, as text and JSON, or exits
// 3, and with --watch a line per change; hostile values are shown without their control bytes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::CliTest;
using cli_testing::shows_no_control;
using cli_testing::until_exists;
using testing::eventually;

class CliElectTest : public CliTest {
 protected:
  std::string leader_key() const { return "leasehold:Election:{elect:" + name_ + "}"; }
  bool exists_file(const std::string& path) const { return ::access(path.c_str(), F_OK) == 0; }
};

std::vector<long long> numbers_in(const std::string& text) {
  std::istringstream in(text);
  std::vector<long long> numbers;
  for (long long n = 0; in >> n;)
    numbers.push_back(n);
  return numbers;
}

TEST_F(CliElectTest, TheCommandRunsWhileLeadingWithItsTermAndTheStatusFileExistsMeanwhile) {
  const std::string status = file("-status");
  const std::string seen = file("-seen");
  auto elect = cli({"elect", "--status-file", status, name_, "--", "sh", "-c",
                    "echo \"$LEASEHOLD_NAME $LEASEHOLD_TERM\"; test -e " + status + " && touch " +
                        seen + "; exit 3"});
  EXPECT_EQ(elect.wait(), 3) << "the command's status";
  EXPECT_EQ(elect.out(), name_ + " 1\n") << "its first term";
  EXPECT_TRUE(exists_file(seen)) << "the status file existed while leading";
  EXPECT_FALSE(exists_file(status)) << "and is gone after";
  EXPECT_FALSE(exists(leader_key())) << "resigned on the way out";
  auto leader = cli({"leader", name_});
  EXPECT_EQ(leader.wait(), 3) << "nobody leads";
  EXPECT_EQ(leader.out(), "nobody leads '" + name_ + "'\n");
}

TEST_F(CliElectTest, ASecondElectWaitsAndLeadsWhenTheFirstEndsWithALargerTerm) {
  const std::string release = file("-release");
  auto first = cli({"elect", "--value", "10.0.0.1:80", name_, "--", "sh", "-c",
                    "echo $LEASEHOLD_TERM; " + until_exists(release)});
  ASSERT_TRUE(eventually([&] { return exists(leader_key()); }));
  auto second = cli({"elect", name_, "--", "sh", "-c", "echo $LEASEHOLD_TERM"});
  const std::string queue = leader_key() + ":queue";
  ASSERT_TRUE(eventually([&] {
    return server_->command({"ZCARD", queue}).integer == 1;
  })) << "the second waits while the first leads";
  auto shown = cli({"leader", "--json", name_});
  ASSERT_EQ(shown.wait(), 0);
  const auto json = nlohmann::json::parse(shown.out());
  EXPECT_EQ(json["value"], "10.0.0.1:80");
  EXPECT_EQ(json["pid"], first.pid());
  EXPECT_GE(json["held_ms"].get<long long>(), 0);
  for (const char* field : {"host", "label", "term"})
    EXPECT_TRUE(json.contains(field)) << field;
  auto text = cli({"leader", name_});
  ASSERT_EQ(text.wait(), 0);
  EXPECT_NE(text.out().find("pid " + std::to_string(first.pid())), std::string::npos) << text.out();
  std::ofstream{release} << "go\n";
  EXPECT_EQ(first.wait(), 0);
  EXPECT_EQ(second.wait(), 0);
  const auto first_term = numbers_in(first.out());
  const auto second_term = numbers_in(second.out());
  ASSERT_EQ(first_term.size(), 1u);
  ASSERT_EQ(second_term.size(), 1u);
  EXPECT_GT(second_term[0], first_term[0]);
  EXPECT_EQ(json["term"], first_term[0]);
}

// With --rejoin, elect stands again after each term and runs the command again, each time with a
// larger term, until it is told to stop.
TEST_F(CliElectTest, WithRejoinItRunsTheCommandAgainInEachNewTerm) {
  const std::string terms = file("-terms");
  auto elect = cli({"elect", "--rejoin", name_, "--", "sh", "-c",
                    "echo $LEASEHOLD_TERM >> " + terms + "; sleep 0.05"});
  ASSERT_TRUE(eventually([&] { return numbers_in(testing::read_file(terms)).size() >= 3; }));
  elect.signal(SIGTERM);
  const int code = elect.wait();
  EXPECT_TRUE(code == 0 || code == 128 + SIGTERM) << code;
  const auto numbers = numbers_in(testing::read_file(terms));
  for (std::size_t i = 1; i < numbers.size(); ++i)
    EXPECT_GT(numbers[i], numbers[i - 1]);
  EXPECT_FALSE(exists(leader_key())) << "resigned on the way out";
}

// Three elects with --rejoin stand for one name; round after round the leader's elect is
// SIGKILLed (and a new one started in its place). Its command is stopped by its watchdog long
// before the lease runs out, so the next leader's command never runs next to it: each command
// takes a directory as it starts and gives it back at its SIGTERM, and finds it free.
TEST_F(CliElectTest, RejoiningElectsWhoseLeaderIsKilledRunOneCommandAtATime) {
  const std::string section = file("-section");
  const std::string overlaps = file("-overlaps");
  const std::string starts = file("-starts");
  const std::string command =
      "trap '[ -n \"$mine\" ] && rmdir " + section + "; exit 0' TERM; " +  //
      "if mkdir " + section + " 2>/dev/null; then mine=1; else echo $LEASEHOLD_TERM >> " +
      overlaps + "; fi; echo \"$LEASEHOLD_TERM $$ $PPID\" >> " + starts +
      "; while :; do sleep 0.02; done";
  const auto start_elect = [&] {
    return std::make_unique<cli_testing::Cli>(
        std::vector<std::string>{"--redis", server_->unix_url(), "elect", "--rejoin", "-t", "1s",
                                 "--kill-after", "300ms", name_, "--", "sh", "-c", command},
        server_->dir());
  };
  std::vector<std::unique_ptr<cli_testing::Cli>> elects;
  for (int i = 0; i < 3; ++i)
    elects.push_back(start_elect());
  const auto started = [&] {
    std::vector<std::vector<long long>> lines;
    std::istringstream in(testing::read_file(starts));
    for (std::string line; std::getline(in, line);)
      lines.push_back(numbers_in(line));
    return lines;
  };
  constexpr std::size_t kRounds = 5;
  for (std::size_t round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(eventually([&] { return started().size() == round + 1; }, 10s))
        << "round " << round << ": no new leader";
    const std::vector<long long> leader = started().back();  // term, command, its elect
    ASSERT_EQ(leader.size(), 3u);
    const auto killed = std::find_if(elects.begin(), elects.end(), [&](const auto& elect) {
      return elect->pid() == static_cast<pid_t>(leader[2]);
    });
    ASSERT_NE(killed, elects.end()) << "the command's parent is one of the elects";
    (*killed)->signal(SIGKILL);
    EXPECT_EQ((*killed)->wait(), 128 + SIGKILL);
    EXPECT_TRUE(
        eventually([&] { return !cli_testing::running(static_cast<pid_t>(leader[1])); }, 2s))
        << "round " << round << ": the killed leader's command still runs";
    *killed = start_elect();
  }
  ASSERT_TRUE(eventually([&] { return started().size() == kRounds + 1; }, 10s));
  for (auto& elect : elects)
    elect->signal(SIGTERM);
  for (auto& elect : elects) {
    const int code = elect->wait();
    EXPECT_TRUE(code == 0 || code == 128 + SIGTERM) << code;
  }
  EXPECT_EQ(testing::read_file(overlaps), "") << "terms whose command started next to another";
  const auto lines = started();
  for (const auto& line : lines)  // a failed run leaves no command behind
    if (line.size() == 3 && cli_testing::running(static_cast<pid_t>(line[1])))
      ::kill(-static_cast<pid_t>(line[1]), SIGKILL);
  for (std::size_t i = 1; i < lines.size(); ++i)
    EXPECT_GT(lines[i][0], lines[i - 1][0]) << "terms increase";
  EXPECT_FALSE(exists(leader_key())) << "the last leader resigned";
}

// An operator's release --force deposes the leader: its command is terminated, and elect exits
// 75 (without --rejoin) saying so.
TEST_F(CliElectTest, AForcedReleaseDeposesTheLeaderWhoseElectExits75) {
  const std::string started = file("-started");
  const std::string terminated = file("-terminated");
  auto elect = cli({"elect", "-t", "600ms", name_, "--", "sh", "-c",
                    "trap 'touch " + terminated + "; exit 0' TERM; touch " + started +
                        "; while :; do sleep 0.05; done"});
  ASSERT_TRUE(eventually([&] { return exists_file(started); }));
  auto release = cli({"release", "--force", name_});
  EXPECT_EQ(release.wait(), 0);
  EXPECT_NE(release.out().find("the leader of term 1"), std::string::npos) << release.out();
  EXPECT_EQ(elect.wait(), 75);
  EXPECT_TRUE(exists_file(terminated)) << "the command was sent SIGTERM";
  EXPECT_NE(elect.err().find("lost the leadership"), std::string::npos) << elect.err();
}

// SIGTERM to elect goes to the command, as run passes it on; elect then exits with the command's
// status and resigns.
TEST_F(CliElectTest, ASignalIsPassedToTheCommandAndElectResigns) {
  const std::string started = file("-started");
  auto elect = cli({"elect", name_, "--", "sh", "-c",
                    "trap 'exit 7' TERM; touch " + started + "; while :; do sleep 0.05; done"});
  ASSERT_TRUE(eventually([&] { return exists_file(started); }));
  elect.signal(SIGTERM);
  EXPECT_EQ(elect.wait(), 7);
  EXPECT_FALSE(exists(leader_key())) << "resigned";
}

// A signal while elect waits to lead ends it with 128 + the signal, leaving no place behind.
TEST_F(CliElectTest, ASignalWhileStandingEndsElectWithNoPlaceLeft) {
  const std::string release = file("-release");
  auto leader = cli({"elect", name_, "--", "sh", "-c", until_exists(release)});
  ASSERT_TRUE(eventually([&] { return exists(leader_key()); }));
  auto standing = cli({"elect", name_, "--", "true"});
  const std::string queue = leader_key() + ":queue";
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }));
  standing.signal(SIGINT);
  EXPECT_EQ(standing.wait(), 128 + SIGINT);
  EXPECT_EQ(server_->command({"ZCARD", queue}).integer, 0);
  std::ofstream{release} << "go\n";
  EXPECT_EQ(leader.wait(), 0);
}

// leader --watch prints a line at once and one per change (a new leader, its value, nobody),
// until SIGTERM; then it exits 0.
TEST_F(CliElectTest, LeaderWatchPrintsALineNowAndOnePerChangeUntilSigterm) {
  auto watch = cli({"leader", "--watch", "--json", name_});
  const auto lines = [&] {
    std::vector<nlohmann::json> parsed;
    std::istringstream in(watch.out());
    for (std::string line; std::getline(in, line);)
      parsed.push_back(nlohmann::json::parse(line));
    return parsed;
  };
  ASSERT_TRUE(eventually([&] { return lines().size() == 1; }));
  EXPECT_TRUE(lines()[0]["leader"].is_null()) << watch.out();
  const std::string release = file("-release");
  auto elect = cli({"elect", "--value", "v1", name_, "--", "sh", "-c", until_exists(release)});
  ASSERT_TRUE(eventually([&] {
    const auto seen = lines();
    return seen.back().contains("value") && seen.back()["value"] == "v1";
  })) << watch.out();
  EXPECT_EQ(lines().back()["term"], 1);
  std::ofstream{release} << "go\n";
  EXPECT_EQ(elect.wait(), 0);
  ASSERT_TRUE(eventually([&] { return lines().back().contains("leader"); })) << watch.out();
  EXPECT_TRUE(lines().back()["leader"].is_null()) << "resigned: nobody leads";
  watch.signal(SIGTERM);
  EXPECT_EQ(watch.wait(), 0);
  auto text = cli({"leader", "--watch", name_});
  ASSERT_TRUE(eventually([&] { return !text.out().empty(); }));
  text.signal(SIGINT);
  EXPECT_EQ(text.wait(), 0);
  EXPECT_EQ(text.out(), "nobody leads '" + name_ + "'\n");
}

TEST_F(CliElectTest, AHostileValueAndLabelAreShownWithoutTheirControlBytes) {
  const std::string release = file("-release");
  auto elect = cli({"elect", "--value", "\x1b[31mred\x07", name_, "--", "sh", "-c",
                    "# \x1b]0;title\x07\n" + until_exists(release)});
  ASSERT_TRUE(eventually([&] { return exists(leader_key()); }));
  auto text = cli({"leader", name_});
  ASSERT_EQ(text.wait(), 0);
  EXPECT_TRUE(shows_no_control(text.out()));
  auto json = cli({"leader", "--json", name_});
  ASSERT_EQ(json.wait(), 0);
  EXPECT_TRUE(shows_no_control(json.out()));
  EXPECT_EQ(nlohmann::json::parse(json.out())["value"], "\x1b[31mred\x07");
  std::ofstream{release} << "go\n";
  EXPECT_EQ(elect.wait(), 0);
}

// status, list and top show an election's leader beside a name's other leases.
TEST_F(CliElectTest, StatusListAndTopShowTheLeader) {
  const std::string release = file("-release");
  auto elect = cli({"--prefix", prefix_, "elect", "--value", "v1", name_, "--", "sh", "-c",
                    until_exists(release)});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":Election:{elect:" + name_ + "}"); }));
  auto status = cli({"--prefix", prefix_, "status", name_});
  ASSERT_EQ(status.wait(), 0);
  EXPECT_EQ(status.out().rfind(name_ + ": led in term 1: ", 0), 0u) << status.out();
  EXPECT_NE(status.out().find("value \"v1\""), std::string::npos) << status.out();
  auto status_json = cli({"--prefix", prefix_, "status", "--json", name_});
  ASSERT_EQ(status_json.wait(), 0);
  const auto statuses = nlohmann::json::parse(status_json.out());
  EXPECT_EQ(statuses.at(0)["leader"]["term"], 1);
  EXPECT_EQ(statuses.at(0)["leader"]["pid"], elect.pid());
  auto list = cli({"--prefix", prefix_, "list"});
  ASSERT_EQ(list.wait(), 0);
  EXPECT_EQ(list.out().rfind(name_ + ": led in term 1", 0), 0u) << list.out();
  auto top = cli({"--prefix", prefix_, "top", "--json"});
  ASSERT_EQ(top.wait(), 0);
  const auto rows = nlohmann::json::parse(top.out());
  ASSERT_EQ(rows.size(), 1u) << top.out();
  EXPECT_EQ(rows[0]["kind"], "leader");
  EXPECT_EQ(rows[0]["name"], name_);
  EXPECT_EQ(rows[0]["fence"], 1) << "a leader's fence is its term";
  std::ofstream{release} << "go\n";
  EXPECT_EQ(elect.wait(), 0);
}

// A key of the election that holds another type (something else wrote it) is named, with the
// way out: release --force removes it, and elect then leads.
TEST_F(CliElectTest, AnElectionKeyOfAnotherTypeIsNamedAndExits65UntilForcedOut) {
  server_->command({"HSET", leader_key(), "field", "value"});
  auto elect = cli({"elect", name_, "--", "true"});
  EXPECT_EQ(elect.wait(), 65);
  EXPECT_NE(elect.err().find(leader_key() + " holds a hash"), std::string::npos) << elect.err();
  EXPECT_NE(elect.err().find("release --force"), std::string::npos) << elect.err();
  auto release = cli({"release", "--force", name_});
  EXPECT_EQ(release.wait(), 0);
  EXPECT_NE(release.out().find("removed " + leader_key()), std::string::npos) << release.out();
  auto again = cli({"elect", name_, "--", "true"});
  EXPECT_EQ(again.wait(), 0);
}

TEST_F(CliElectTest, BadInputIsAUsageError) {
  auto no_command = cli({"elect", name_});
  EXPECT_EQ(no_command.wait(), 64);
  EXPECT_NE(no_command.err().find("no COMMAND"), std::string::npos) << no_command.err();
  auto short_ttl = cli({"elect", "-t", "1ms", name_, "--", "true"});
  EXPECT_EQ(short_ttl.wait(), 64);
  auto no_name = cli({"leader"});
  EXPECT_EQ(no_name.wait(), 64);
}

}  // namespace
}  // namespace leasehold
