// Other clients' locks as real child processes: a process started with posix_spawnp, its stdin
// and stdout on pipes and its stderr in a file, read and waited for against deadlines (never
// sleeps as synchronisation). And a temporary directory for a test's files.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::interop {

using Deadline = std::chrono::steady_clock::time_point;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it by the destructor.
class TempDir {
 public:
  explicit TempDir(std::string_view name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class DriverProcess {
 public:
  // Starts argv[0] (looked up on PATH when it has no '/') with the environment of this process
  // plus `extra_env` ("NAME=value"), its stderr appended to `stderr_path`. Throws
  // std::runtime_error, naming the program, when it cannot be started.
  DriverProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                std::string stderr_path);
  ~DriverProcess();  // kills (SIGKILL) and reaps a process still running
  DriverProcess(DriverProcess&& other) noexcept;
  DriverProcess(const DriverProcess&) = delete;
  DriverProcess& operator=(const DriverProcess&) = delete;
  DriverProcess& operator=(DriverProcess&&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& program() const { return program_; }

  // The next line of its stdout, without its '\n'; nothing once stdout closed, or when `deadline`
  // passed first.
  std::optional<std::string> read_line(Deadline deadline);
  // All of its stdout until it closes; nothing when `deadline` passed first.
  std::optional<std::string> read_all(Deadline deadline);
  // One line to its stdin; false if it could not be written (the process is gone).
  bool write_line(std::string_view line);
  void close_stdin();

  // Its exit status (128 + the signal when a signal ended it); nothing when `deadline` passed
  // first (it then still runs).
  std::optional<int> wait(Deadline deadline);
  void kill();

  // What it wrote to stderr so far.
  std::string stderr_text() const;

 private:
  std::string program_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;  // read from stdout, not yet returned
  std::optional<int> status_;
};

// Runs argv to its end: its stdout, or std::runtime_error (naming the command, its exit status,
// its stdout and stderr) when it failed or was not done by `timeout`.
std::string run_to_end(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env, const std::string& stderr_path,
                       std::chrono::milliseconds timeout);

// "a b c", for messages.
std::string join(const std::vector<std::string>& words);

}  // namespace leasehold::interop
