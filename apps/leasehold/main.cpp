// The leasehold command. Its subcommands (run, cron, status, list, release) come with the CLI
// issue; this version parses the global options and answers --help and --version.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

#include "leasehold/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"leasehold: distributed leases on Redis, a distributed flock(1) for shell scripts"};
  app.set_version_flag("--version", std::string("leasehold ") + leasehold::version);
  std::string redis_url;
  if (const char* env = std::getenv("LEASEHOLD_REDIS_URL"))
    redis_url = env;
  else
    redis_url = "redis://127.0.0.1:6379";
  app.add_option("--redis", redis_url,
                 "Redis URL (default: $LEASEHOLD_REDIS_URL, then "
                 "redis://127.0.0.1:6379)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 64 (EX_USAGE); --help and --version exit 0.
    const int code = app.exit(e);
    return code == 0 ? 0 : 64;
  }
  std::cout << app.help();
  return 0;
}
