// What the torture scenarios share: their scale, worker processes, history directories, and the
// figures they report.
//
// LEASEHOLD_TORTURE_SCALE picks the scale: unset or "short" for the short tier of scripts/test
// (each scenario a few seconds), "full" for scripts/soak (the durations and counts that
// docs/reliability.md quotes), or a number (1 = full). LEASEHOLD_TORTURE_KEEP=DIR keeps every
// scenario's histories under DIR.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "history.hpp"
#include "history_checker.hpp"

namespace leasehold::testing::torture {

double scale();
// `full` at full scale, scaled down (but never below `minimum`) otherwise.
std::chrono::milliseconds scaled(std::chrono::milliseconds full, std::chrono::milliseconds minimum);
int scaled(int full, int minimum);

// A directory for one scenario's history files; removed at the end unless LEASEHOLD_TORTURE_KEEP
// is set or the test has failed (the path is printed then).
class HistoryDir {
 public:
  explicit HistoryDir(const std::string& scenario);
  ~HistoryDir();
  HistoryDir(const HistoryDir&) = delete;
  HistoryDir& operator=(const HistoryDir&) = delete;

  const std::string& path() const { return path_; }
  // "<dir>/<stem>.events"
  std::string file(const std::string& stem) const { return path_ + "/" + stem + ".events"; }

 private:
  std::string path_;
  bool keep_ = false;
};

// A leasehold-torture-worker process. The destructor SIGKILLs it if it still runs.
class Worker {
 public:
  explicit Worker(std::vector<std::string> args);
  // The worker started by `launcher` (e.g. NetworkLab::on(host): on a host of a lab).
  Worker(std::vector<std::string> args, const std::vector<std::string>& launcher);
  ~Worker();
  Worker(Worker&& other) noexcept;
  Worker& operator=(Worker&& other) noexcept;  // SIGKILLs the process it replaces
  Worker(const Worker&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exited_; }
  // True once it exited (exit_code() then says how), false if `timeout` passed first.
  bool wait(std::chrono::milliseconds timeout);
  int exit_code() const { return exit_code_; }  // -signal if killed by a signal
  void signal(int signal_number) const;
  // SIGKILL and wait.
  void kill();

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = 0;
};

// The worker's arguments: MODE --url URL --out FILE, then `options` as --key value pairs.
std::vector<std::string> worker_args(
    const std::string& mode, const std::string& url, const std::string& out,
    const std::vector<std::pair<std::string, std::string>>& options);

// "n0,n1,...": the --names of a scenario on `count` names.
std::string name_list(int count);

// `kills` times: after a random pause of 20–400 ms, SIGKILLs one of `workers` at random (recorded
// in `faults` as a fault "sigkill" with the victim's pid) and puts spawn() in its place.
void kill_at_random_points(std::vector<Worker>& workers, int kills, const Recorder& faults,
                           const std::function<Worker()>& spawn);

// Polls the events of one history file until predicate(events) holds; false after `timeout`.
bool wait_for_history(const std::string& file,
                      const std::function<bool(const std::vector<Event>&)>& predicate,
                      std::chrono::milliseconds timeout);

// Prints "FIGURE <scenario> key=value ..." (scripts/soak collects these lines) and records each
// figure as a test property.
void report_figures(const std::string& scenario,
                    const std::vector<std::pair<std::string, std::string>>& figures);
std::string ms_figure(double milliseconds);
std::string seconds_figure(std::chrono::milliseconds duration);

}  // namespace leasehold::testing::torture
