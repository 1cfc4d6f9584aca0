// A private redis-server for one test (or one test suite): started in a fresh temp directory on a
// free loopback port and a unix socket, never 6379, never the system service. Stopped (and its
// directory removed) by the destructor. Also an independent admin channel (hiredis, blocking) so
// that tests never check leasehold with leasehold.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "leasehold/reply.hpp"

namespace leasehold::testing {

class RedisServer {
 public:
  struct Options {
    std::vector<std::string> extra_args;  // e.g. {"--requirepass", "secret"}
    // Run the server under libfaketime (Debian's faketime package), so that the test can step its
    // wall clock with set_clock_offset(). Its monotonic clock stays the real one.
    bool fake_clock = false;
    // Started through these first (e.g. {"ip", "netns", "exec", NS}: on a NetworkLab host),
    // listening on `bind` (its address there). The tests' own commands go over the unix socket.
    std::vector<std::string> launcher{};
    std::string bind = "127.0.0.1";
  };

  RedisServer();
  explicit RedisServer(Options options);
  // A sentinel (redis-server CONFIG --sentinel) with `sentinel_config` the lines of its
  // configuration file, which it rewrites as it learns ("sentinel monitor NAME HOST PORT Q", ...).
  RedisServer(Options options, std::vector<std::string> sentinel_config);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  // With "?$LEASEHOLD_TEST_URL_QUERY" when that is set (tests/CMakeLists.txt).
  std::string tcp_url() const;   // redis://<bind>:<port>
  std::string unix_url() const;  // unix://<socket>

  void stop();    // SIGTERM, then waits for the process
  void kill();    // SIGKILL, then waits for the process
  void start();   // again, on the same port and socket
  void pause();   // SIGSTOP
  void resume();  // SIGCONT

  // A fake_clock server's wall clock (TIME, key expiry) becomes the real clock plus `offset`,
  // from its next reading on: a negative offset steps it back. Starts at zero.
  void set_clock_offset(std::chrono::milliseconds offset);

  // A command on a fresh blocking connection (over the unix socket). The admin user is the
  // default user; servers started with --requirepass get it from `admin_password`.
  Reply command(const std::vector<std::string>& args) const;
  std::string admin_password;

 private:
  void launch();
  bool log_says_address_in_use() const;  // its last start failed on a port another process took
  void wait_ready(std::chrono::milliseconds timeout);

  std::string clock_file() const { return dir_ + "/faketime.rc"; }

  Options options_;
  std::vector<std::string> sentinel_config_;  // a sentinel's, else empty
  std::string dir_;
  std::string socket_path_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A free TCP port on 127.0.0.1 (the kernel picks it), never 6379.
int free_port();

// A prefix unique to the calling test, for its keys.
std::string test_prefix();

}  // namespace leasehold::testing
