// leasehold-with-redis: runs a command next to a private redis-server.
//
//   leasehold-with-redis [--password P] -- COMMAND [ARG...]
//
// Starts redis-server in a temp dir on a free loopback port and a unix socket (never 6379),
// exports LEASEHOLD_REDIS_URL (tcp) and LEASEHOLD_REDIS_UNIX_URL, runs COMMAND, stops the server,
// and exits with COMMAND's status. Used by the examples' tests and by scripts/demo.
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "redis_server.hpp"

extern char** environ;

int main(int argc, char** argv) {
  int first = 1;
  leasehold::testing::RedisServer::Options options;
  while (first < argc && std::string(argv[first]) != "--") {
    if (std::string(argv[first]) == "--password" && first + 1 < argc) {
      options.extra_args = {"--requirepass", argv[first + 1]};
      first += 2;
    } else {
      std::cerr << "usage: leasehold-with-redis [--password P] -- COMMAND [ARG...]\n";
      return 64;
    }
  }
  if (first + 1 >= argc) {
    std::cerr << "usage: leasehold-with-redis [--password P] -- COMMAND [ARG...]\n";
    return 64;
  }
  try {
    leasehold::testing::RedisServer server(options);
    ::setenv("LEASEHOLD_REDIS_URL", server.tcp_url().c_str(), 1);
    ::setenv("LEASEHOLD_REDIS_UNIX_URL", server.unix_url().c_str(), 1);
    pid_t child = -1;
    if (posix_spawnp(&child, argv[first + 1], nullptr, nullptr, argv + first + 1, environ) != 0) {
      std::cerr << "leasehold-with-redis: cannot run " << argv[first + 1] << "\n";
      return 127;
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status))
      return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  } catch (const std::exception& e) {
    std::cerr << "leasehold-with-redis: " << e.what() << "\n";
    return 69;
  }
}
