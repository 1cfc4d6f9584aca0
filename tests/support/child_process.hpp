// A program run by a test as a real child process: its output in files, its stdin /dev/null or a
// pipe the test writes to and closes, its exit awaited against a deadline. Killed if it is still
// running when the object goes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace leasehold::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ChildProcess {
 public:
  enum class Input { null, pipe };

  // args[0] is found on PATH; the output goes to files in `dir`.
  ChildProcess(std::vector<std::string> args, const std::string& dir, Input input = Input::null) {
    static int counter = 0;
    const std::string id = std::to_string(++counter);
    out_path_ = dir + "/child" + id + ".out";
    err_path_ = dir + "/child" + id + ".err";
    std::vector<char*> argv;
    for (auto& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    int input_pipe[2] = {-1, -1};
    if (input == Input::pipe && ::pipe2(input_pipe, O_CLOEXEC) != 0)
      return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (input == Input::pipe)
      posix_spawn_file_actions_adddup2(&actions, input_pipe[0], 0);
    else
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    started_ = std::chrono::steady_clock::now();
    if (posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    if (input == Input::pipe) {
      ::close(input_pipe[0]);
      input_ = input_pipe[1];
    }
  }
  ~ChildProcess() {
    close_input();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int number) const { ::kill(pid_, number); }
  // With Input::pipe: ends the child's stdin.
  void close_input() {
    if (input_ >= 0)
      ::close(input_);
    input_ = -1;
  }

  // Waits for the exit (at most `timeout`); the exit code, 128 + signal, or -1 on timeout.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        took_ = std::chrono::steady_clock::now() - started_;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling against a deadline
    }
    return -1;
  }
  std::string out() const { return read_file(out_path_); }
  std::string err() const { return read_file(err_path_); }
  std::chrono::steady_clock::duration took() const { return took_; }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  int input_ = -1;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::duration took_{};
};

}  // namespace leasehold::testing
