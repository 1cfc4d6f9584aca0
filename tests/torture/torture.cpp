#include "torture.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <thread>

#include "build_paths.hpp"

extern char** environ;

namespace leasehold::testing::torture {

double scale() {
  const char* text = std::getenv("LEASEHOLD_TORTURE_SCALE");
  const std::string value = text ? text : "";
  if (value.empty() || value == "short")
    return 0.15;
  if (value == "full")
    return 1.0;
  return std::stod(value);
}

std::chrono::milliseconds scaled(std::chrono::milliseconds full,
                                 std::chrono::milliseconds minimum) {
  const auto count =
      static_cast<long long>(std::llround(static_cast<double>(full.count()) * scale()));
  return std::max(std::chrono::milliseconds(count), minimum);
}

int scaled(int full, int minimum) {
  return std::max(static_cast<int>(std::lround(full * scale())), minimum);
}

HistoryDir::HistoryDir(const std::string& scenario) {
  const char* keep = std::getenv("LEASEHOLD_TORTURE_KEEP");
  keep_ = keep && *keep;
  const std::filesystem::path base =
      keep_ ? std::filesystem::path(keep) : std::filesystem::temp_directory_path();
  path_ =
      (base / (scenario + "-" + std::to_string(::getpid()) + "-" + std::to_string(monotonic_ns())))
          .string();
  std::filesystem::create_directories(path_);
  if (keep_)
    std::cout << "histories of " << scenario << " in " << path_ << "\n";
}

HistoryDir::~HistoryDir() {
  if (keep_)
    return;
  if (::testing::Test::HasFailure()) {
    std::cout << "kept the histories of the failed test in " << path_ << "\n";
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Worker::Worker(std::vector<std::string> args) : Worker(std::move(args), {}) {}

Worker::Worker(std::vector<std::string> args, const std::vector<std::string>& launcher) {
  args.insert(args.begin(), build_paths::torture_worker);
  args.insert(args.begin(), launcher.begin(), launcher.end());
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  // A launcher is looked up on PATH; it execs the worker, whose pid stays this one.
  if (posix_spawnp(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start " + args[0]);
}

Worker::Worker(Worker&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), exited_(other.exited_), exit_code_(other.exit_code_) {}

Worker& Worker::operator=(Worker&& other) noexcept {
  if (this != &other) {
    kill();
    pid_ = std::exchange(other.pid_, -1);
    exited_ = other.exited_;
    exit_code_ = other.exit_code_;
  }
  return *this;
}

Worker::~Worker() {
  if (running())
    kill();
}

bool Worker::wait(std::chrono::milliseconds timeout) {
  if (exited_)
    return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling against a deadline
  }
}

void Worker::signal(int signal_number) const {
  if (running())
    ::kill(pid_, signal_number);
}

void Worker::kill() {
  if (!running())
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exited_ = true;
  exit_code_ = -SIGKILL;
}

std::vector<std::string> worker_args(
    const std::string& mode, const std::string& url, const std::string& out,
    const std::vector<std::pair<std::string, std::string>>& options) {
  std::vector<std::string> args = {mode, "--url", url, "--out", out};
  for (const auto& [key, value] : options) {
    args.push_back("--" + key);
    if (!value.empty())
      args.push_back(value);
  }
  return args;
}

void kill_at_random_points(std::vector<Worker>& workers, int kills, const Recorder& faults,
                           const std::function<Worker()>& spawn) {
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pause_ms(20, 400);
  std::uniform_int_distribution<std::size_t> pick(0, workers.size() - 1);
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));  // a random point
    Worker& victim = workers[pick(random)];
    faults.record({.kind = EventKind::fault, .target = victim.pid(), .detail = "sigkill"});
    victim.kill();
    victim = spawn();
  }
}

bool wait_for_history(const std::string& file,
                      const std::function<bool(const std::vector<Event>&)>& predicate,
                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (predicate(read_history_file(file)))
      return true;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling against a deadline
  }
}

void report_figures(const std::string& scenario,
                    const std::vector<std::pair<std::string, std::string>>& figures) {
  std::string line = "FIGURE " + scenario;
  for (const auto& [key, value] : figures) {
    line += " " + key + "=" + value;
    ::testing::Test::RecordProperty(key, value);
  }
  std::cout << line << std::endl;
}

std::string ms_figure(double milliseconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fms", milliseconds);
  return text;
}

std::string seconds_figure(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(duration.count()) / 1000);
  return text;
}

std::string name_list(int count) {
  std::string names;
  for (int n = 0; n < count; ++n)
    names += (n ? "," : "") + std::string("n") + std::to_string(n);
  return names;
}

}  // namespace leasehold::testing::torture
