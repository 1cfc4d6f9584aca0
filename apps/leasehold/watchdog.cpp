#include "watchdog.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace leasehold::cli {
namespace {

std::int64_t monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1'000'000;
}

// Reads exactly `size` bytes; false at the end of the stream (leasehold is gone) or an error.
bool read_fully(int from, void* into, std::size_t size) {
  auto* at = static_cast<char*>(into);
  while (size > 0) {
    const ssize_t got = ::read(from, at, size);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    at += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

// The watchdog's whole life: it learns the command's group, then waits for leasehold's word (the
// command is done) or its end. It is forked from a process with threads, so it makes only
// async-signal-safe calls, and it ends with _exit.
[[noreturn]] void watch(int parent_end, std::chrono::milliseconds kill_after) {
  // The signals of leasehold's own group (a terminal's ^C) are for leasehold, which passes them on.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP})
    ::sigaction(signal, &ignore, nullptr);
  // Keep only stderr and the socket: an inherited descriptor (a socket, another watchdog's socket)
  // would outlive leasehold here.
  ::close_range(0, 1, 0);
  if (parent_end > 3)
    ::close_range(3, static_cast<unsigned>(parent_end) - 1, 0);
  ::close_range(static_cast<unsigned>(parent_end) + 1, ~0U, 0);

  pid_t group = 0;
  if (!read_fully(parent_end, &group, sizeof group))
    ::_exit(0);  // no command was started
  char word = 0;
  if (read_fully(parent_end, &word, 1))
    ::_exit(0);  // dismissed: the command is done

  static constexpr char kSaid[] =
      "leasehold: ended while its command ran; the command's group is stopped (SIGTERM, then "
      "SIGKILL after --kill-after)\n";
  [[maybe_unused]] const ssize_t written = ::write(2, kSaid, sizeof kSaid - 1);
  ::kill(-group, SIGTERM);
  const std::int64_t kill_at = monotonic_ms() + kill_after.count();
  while (::kill(-group, 0) == 0 || errno == EPERM) {
    if (monotonic_ms() >= kill_at) {
      ::kill(-group, SIGKILL);
      break;
    }
    timespec pause{0, 20'000'000};
    ::nanosleep(&pause, nullptr);
  }
  ::_exit(0);
}

}  // namespace

Watchdog start_watchdog(std::chrono::milliseconds kill_after) {
  // A socket pair rather than a pipe: dismiss() then writes without risking SIGPIPE. Close-on-exec:
  // the commands leasehold starts must not hold it open.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    return {};
  const pid_t pid = ::fork();
  if (pid == 0)
    watch(ends[0], kill_after);
  ::close(ends[0]);
  if (pid < 0) {
    ::close(ends[1]);
    return {};
  }
  return Watchdog{pid, ends[1]};
}

void tell_group(const Watchdog& watchdog, pid_t group) {
  if (watchdog.pid < 0)
    return;
  [[maybe_unused]] const ssize_t sent = ::send(watchdog.socket, &group, sizeof group, MSG_NOSIGNAL);
}

void dismiss(Watchdog& watchdog) {
  if (watchdog.pid < 0)
    return;
  const char done = 'd';
  [[maybe_unused]] const ssize_t sent = ::send(watchdog.socket, &done, 1, MSG_NOSIGNAL);
  ::close(watchdog.socket);
  while (::waitpid(watchdog.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  watchdog = Watchdog{};
}

}  // namespace leasehold::cli
