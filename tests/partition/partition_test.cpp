// Leases across network partitions: a redis-server and the processes that hold leases on it run
// on hosts of a NetworkLab (network namespaces the test makes), and the test cuts the network
// between them, silently, as a failed switch would.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "network_lab.hpp"
#include "redis_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::NetworkLab;
using testing::RedisServer;

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::optional<std::string> why = NetworkLab::unavailable())
      GTEST_SKIP() << "no network lab here: " << *why;
    lab_.emplace();
    const NetworkLab::Host& host = lab_->add_host("redis");
    RedisServer::Options options;
    options.launcher = lab_->on(host);
    options.bind = host.address;
    redis_.emplace(options);
  }

  // `leasehold run` of `name` on `host`, its command `command`.
  std::unique_ptr<ChildProcess> run_on(const std::string& host, const std::string& name,
                                       const std::string& ttl, std::vector<std::string> command) {
    std::vector<std::string> args = lab_->on(lab_->host(host));
    args.insert(args.end(), {testing::build_paths::cli, "--redis", redis_->tcp_url(), "--prefix",
                             "lab", "run", "-t", ttl, name, "--"});
    args.insert(args.end(), command.begin(), command.end());
    return std::make_unique<ChildProcess>(args, redis_->dir());
  }
  bool held(const std::string& name) {
    return redis_->command({"EXISTS", "lab:RwLock:{run:" + name + "}:w"}).integer == 1;
  }

  std::optional<NetworkLab> lab_;
  std::optional<RedisServer> redis_;
};

// The time (system clock) a command of work_until_stopped() wrote when it was stopped.
std::optional<std::chrono::system_clock::time_point> stopped_at(const std::string& file) {
  const std::string text = testing::read_file(file);
  if (text.empty())
    return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(std::stod(text))));
}

// Work that goes on until SIGTERM, and then writes the time to `file`: bash's own clock
// ($EPOCHREALTIME), read in the trap without starting a program, so that the time is the
// signal's as nearly as a process can tell.
std::vector<std::string> work_until_stopped(const std::string& file) {
  return {"bash", "-c",
          "trap 'echo $EPOCHREALTIME > " + file + "; exit 143' TERM; sleep 60 & wait"};
}

TEST_F(PartitionTest, AHolderCutOffFromRedisStopsItsWorkBeforeTheLeaseRunsOut) {
  lab_->add_host("holder");
  lab_->add_host("other");
  const std::string stop_file = redis_->dir() + "/stopped";
  // A TTL long enough that its margin (1% + 2 ms) covers the signal's way to the work on a
  // loaded machine.
  auto holder = run_on("holder", "invoice-7", "5s", work_until_stopped(stop_file));
  ASSERT_TRUE(testing::eventually([&] { return held("invoice-7"); }, 10s)) << holder->err();

  // Its last extension reached the server before the cut: the server's lease ends at most 5 s
  // after it.
  const auto cut = std::chrono::system_clock::now();
  lab_->partition({"holder"});
  EXPECT_EQ(holder->wait(15s), 75) << "its lease lost: " << holder->err();
  EXPECT_NE(holder->err().find("lost"), std::string::npos) << holder->err();
  const auto stopped = stopped_at(stop_file);
  ASSERT_TRUE(stopped) << "the work was not stopped by SIGTERM";
  EXPECT_LT(*stopped - cut, 5s) << "the work went on after the lease could have run out";

  // The server gives the name to a host it can still reach once the lease has run out.
  auto other = run_on("other", "invoice-7", "2s", {"true"});
  EXPECT_EQ(other->wait(15s), 0) << other->err();

  lab_->heal();
  auto again = run_on("holder", "invoice-7", "2s", {"true"});
  EXPECT_EQ(again->wait(10s), 0) << "healed: " << again->err();
}

TEST_F(PartitionTest, TheLabCutsOnlyWhatItIsToldToAndHeals) {
  lab_->add_host("a");
  lab_->add_host("b");
  lab_->partition({"a"});
  auto cut_off = run_on("a", "probe", "1s", {"true"});
  auto reaching = run_on("b", "probe", "1s", {"true"});
  EXPECT_EQ(reaching->wait(10s), 0) << reaching->err();
  EXPECT_NE(cut_off->wait(10s), 0) << "reached a server it was cut off from";
  lab_->heal();
  auto healed = run_on("a", "probe", "1s", {"true"});
  EXPECT_EQ(healed->wait(10s), 0) << healed->err();
}

}  // namespace
}  // namespace leasehold
