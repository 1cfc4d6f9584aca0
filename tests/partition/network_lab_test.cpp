// The network lab itself: a test process that is killed (a ctest timeout, Ctrl-C, a crash) must
// not leave its namespaces, or the servers running in them, on the machine.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "eventually.hpp"
#include "network_lab.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::NetworkLab;

// True once `pid` has exited (gone, or a zombie that its new parent has yet to reap).
bool exited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line))
    return true;
  const auto state = line.find(") ");
  return state != std::string::npos && line[state + 2] == 'Z';
}

// The process to be killed: a lab with a host, a program running on it. Writes the program's pid
// to `ready` when all of that is up, then waits to be killed.
[[noreturn]] void a_test_process_with_a_lab(const std::string& dir, const std::string& ready) {
  try {
    NetworkLab lab;
    std::vector<std::string> args = lab.on(lab.add_host("server"));
    args.insert(args.end(), {"sleep", "600"});
    ChildProcess program(args, dir);
    {
      std::ofstream out(ready + ".new");
      out << program.pid() << "\n";
    }
    std::filesystem::rename(ready + ".new", ready);
    for (;;)
      ::pause();  // until killed: what the test is about
  } catch (...) {
    std::_Exit(1);
  }
}

TEST(NetworkLabTest, ALabWhoseTestProcessIsKilledLeavesNothingBehind) {
  if (const std::optional<std::string> why = NetworkLab::unavailable())
    GTEST_SKIP() << "no network lab here: " << *why;
  std::string dir = std::filesystem::temp_directory_path().string() + "/leasehold-lab-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string ready = dir + "/ready";

  const pid_t test_process = ::fork();
  ASSERT_GE(test_process, 0);
  if (test_process == 0)
    a_test_process_with_a_lab(dir, ready);
  int status = 0;
  const bool up = testing::eventually(
      [&] {
        return std::filesystem::exists(ready) || ::waitpid(test_process, &status, WNOHANG) != 0;
      },
      20s);
  ASSERT_TRUE(up && std::filesystem::exists(ready)) << "the lab never came up";
  const pid_t program = std::stoi(testing::read_file(ready));
  const std::string prefix = "lh" + std::to_string(test_process) + "-";
  EXPECT_EQ(NetworkLab::namespaces(prefix).size(), 2u);  // the hub and the host
  EXPECT_FALSE(exited(program));

  ::kill(test_process, SIGKILL);
  ::waitpid(test_process, &status, 0);

  EXPECT_TRUE(testing::eventually([&] { return NetworkLab::namespaces(prefix).empty(); }, 20s))
      << "left behind: " << NetworkLab::namespaces(prefix).size() << " namespaces";
  EXPECT_TRUE(testing::eventually([&] { return exited(program); }, 20s))
      << "the program on the lab's host still runs";
  if (!exited(program))
    ::kill(program, SIGKILL);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace leasehold
