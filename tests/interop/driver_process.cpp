#include "driver_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace leasehold::interop {
namespace {

[[noreturn]] void fail(const std::string& what, int error) {
  throw std::runtime_error(what + ": " + std::strerror(error));
}

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

// This process's environment, with `extra` ("NAME=value") added or replacing its namesakes.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> result;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view entry(*variable);
    bool replaced = false;
    for (const auto& added : extra)
      replaced = replaced || entry.substr(0, entry.find('=') + 1) ==
                                 std::string_view(added).substr(0, added.find('=') + 1);
    if (!replaced)
      result.emplace_back(entry);
  }
  result.insert(result.end(), extra.begin(), extra.end());
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings)
    result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

int milliseconds_until(Deadline deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

TempDir::TempDir(std::string_view name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/leasehold-" +
                        std::string(name) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    fail("mkdtemp " + pattern, errno);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

DriverProcess::DriverProcess(const std::vector<std::string>& argv,
                             const std::vector<std::string>& extra_env, std::string stderr_path)
    : program_(argv.at(0)), stderr_path_(std::move(stderr_path)) {
  // A child that died before reading its stdin must not kill this process with SIGPIPE.
  static const bool sigpipe_ignored = [] {
    ::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)sigpipe_ignored;

  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    fail("pipe2", errno);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(in[0]);
    ::close(in[1]);
    fail("pipe2", error);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = environment_with(extra_env);
  auto arg_pointers = pointers(args);
  auto env_pointers = pointers(env);
  const int error = ::posix_spawnp(&pid_, program_.c_str(), &actions, nullptr, arg_pointers.data(),
                                   env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  if (error != 0) {
    pid_ = -1;
    close_fd(stdin_fd_);
    close_fd(stdout_fd_);
    fail("cannot start " + program_, error);
  }
}

DriverProcess::DriverProcess(DriverProcess&& other) noexcept
    : program_(std::move(other.program_)),
      stderr_path_(std::move(other.stderr_path_)),
      pid_(std::exchange(other.pid_, -1)),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      buffered_(std::move(other.buffered_)),
      status_(std::exchange(other.status_, std::nullopt)) {}

DriverProcess::~DriverProcess() {
  kill();
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
}

std::optional<std::string> DriverProcess::read_line(Deadline deadline) {
  for (;;) {
    const auto newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    if (stdout_fd_ < 0) {
      if (buffered_.empty())
        return std::nullopt;
      return std::exchange(buffered_, {});  // a last line without its '\n'
    }
    pollfd readable{stdout_fd_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, milliseconds_until(deadline));
    if (ready < 0 && errno != EINTR)
      fail("poll", errno);
    if (ready <= 0) {
      if (std::chrono::steady_clock::now() >= deadline)
        return std::nullopt;
      continue;
    }
    char chunk[4096];
    const ssize_t got = ::read(stdout_fd_, chunk, sizeof chunk);
    if (got < 0 && errno != EINTR)
      fail("read", errno);
    if (got == 0)
      close_fd(stdout_fd_);
    if (got > 0)
      buffered_.append(chunk, static_cast<std::size_t>(got));
  }
}

std::optional<std::string> DriverProcess::read_all(Deadline deadline) {
  std::string all;
  while (auto line = read_line(deadline))
    all += *line + "\n";
  if (stdout_fd_ >= 0)
    return std::nullopt;  // the deadline passed first
  return all;
}

bool DriverProcess::write_line(std::string_view line) {
  if (stdin_fd_ < 0)
    return false;
  std::string text(line);
  text += '\n';
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t done = ::write(stdin_fd_, text.data() + written, text.size() - written);
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      return false;
    written += static_cast<std::size_t>(done);
  }
  return true;
}

void DriverProcess::close_stdin() {
  close_fd(stdin_fd_);
}

std::optional<int> DriverProcess::wait(Deadline deadline) {
  while (!status_ && pid_ > 0) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done < 0 && errno != EINTR)
      fail("waitpid", errno);
    if (done == pid_) {
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling against a deadline
  }
  return status_;
}

void DriverProcess::kill() {
  if (pid_ <= 0 || status_)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  status_ = 128 + SIGKILL;
}

std::string DriverProcess::stderr_text() const {
  std::ifstream in(stderr_path_);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words)
    text += (text.empty() ? "" : " ") + word;
  return text;
}

std::string run_to_end(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env, const std::string& stderr_path,
                       std::chrono::milliseconds timeout) {
  const Deadline deadline = std::chrono::steady_clock::now() + timeout;
  std::error_code ignored;
  std::filesystem::remove(stderr_path, ignored);  // its stderr alone
  DriverProcess child(argv, extra_env, stderr_path);
  child.close_stdin();
  const auto out = child.read_all(deadline);
  const auto status = out ? child.wait(deadline) : std::nullopt;
  if (!status || *status != 0) {
    const std::string how =
        status ? "exited with status " + std::to_string(*status)
               : "was not done after " + std::to_string(timeout.count()) + " ms (killed)";
    child.kill();
    throw std::runtime_error("`" + join(argv) + "` " + how + "; stdout: " + out.value_or("") +
                             "; stderr: " + child.stderr_text());
  }
  return *out;
}

}  // namespace leasehold::interop
