// The leasehold command: a distributed flock(1), cron across hosts, and lease inspection.
// docs/cli.md is its manual. Each subcommand's flags and action are in commands/.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "commands/commands.hpp"
#include "displayable.hpp"
#include "flags.hpp"

namespace {

using leasehold::cli::Globals;
using leasehold::cli::Invocation;
using leasehold::cli::UsageError;

// The options every subcommand takes, some from the environment.
void add_global_options(CLI::App& app, Globals& globals) {
  if (const char* env = std::getenv("LEASEHOLD_REDIS_URL"))
    globals.redis_url = env;
  else
    globals.redis_url = "redis://127.0.0.1:6379";
  app.add_option("--redis", globals.redis_url,
                 "Redis URL: redis://[user[:password]@]host[:port][/db], unix:///path[?db=N], "
                 "redis-cluster://[user[:password]@]host:port[,host:port...] or "
                 "redis-sentinel://[user[:password]@]host[:port][,...]/MASTER[/db]"
                 "[?sentinel_password=P]; rediss:// and rediss-cluster:// and rediss-sentinel:// "
                 "for TLS (default: $LEASEHOLD_REDIS_URL, then redis://127.0.0.1:6379; the "
                 "sentinels' password may be $LEASEHOLD_SENTINEL_PASSWORD)");
  // TLS: each flag defaults to its environment variable, so that scripts set them once.
  auto tls_option = [&](const char* flag, const char* env, std::string& value, const char* what) {
    if (const char* set = std::getenv(env))
      value = set;
    app.add_option(flag, value, std::string(what) + " (default: $" + env + ")");
  };
  tls_option("--tls-ca-file", "LEASEHOLD_TLS_CA_FILE", globals.tls.ca_file,
             "PEM file of the CAs that sign the server's certificate, for rediss:// (else the "
             "system's)");
  tls_option("--tls-cert-file", "LEASEHOLD_TLS_CERT_FILE", globals.tls.cert_file,
             "PEM client certificate, for servers that want one");
  tls_option("--tls-key-file", "LEASEHOLD_TLS_KEY_FILE", globals.tls.key_file,
             "PEM private key of --tls-cert-file");
  tls_option("--tls-server-name", "LEASEHOLD_TLS_SERVER_NAME", globals.tls.server_name,
             "name to expect in the server's certificate (default: the URL's host)");
  app.add_option("--prefix", globals.prefix, "key prefix of every lease (default: leasehold)");
  app.add_option("--replica-acks", globals.replica_acks,
                 "after each acquire and extend, wait (WAIT) until N replicas have it, else give "
                 "it back and fail (default: the URL's ?replica_acks=N, else 0: off)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("-v,--verbose", globals.verbose, "say what happens: waiting, holders, leases");
  app.add_flag("-q,--quiet", globals.quiet, "say nothing but errors");
}

// CLI11's message for a refused command line, each line shown through displayable(): it quotes
// the arguments it refuses.
std::string shown_failure(const CLI::App* app, const CLI::Error& error) {
  std::istringstream lines(CLI::FailureMessage::simple(app, error));
  std::string shown;
  for (std::string line; std::getline(lines, line);)
    shown += leasehold::cli::displayable(line) + "\n";
  return shown;
}

// Whether the first `count` words of the command line parse as a run (which then takes the words
// after "--" as its COMMAND). If not, the parse leaves nothing behind for the next one.
bool parses_as_run(CLI::App& app, Invocation& invocation, int count, char** argv) {
  try {
    app.parse(count, argv);
    if (invocation.takes_words_after_separator)
      return true;
  } catch (const CLI::ParseError&) {
  }
  app.clear();
  invocation.action = nullptr;
  invocation.refused.reset();
  invocation.takes_words_after_separator = false;
  return false;
}

// Runs the parsed subcommand: its exit code, or the one its error maps to.
int exit_code_of(const Invocation& invocation) {
  namespace cli = leasehold::cli;
  try {
    if (invocation.globals.verbose && invocation.globals.quiet)
      throw UsageError{"--verbose and --quiet exclude each other"};
    if (invocation.refused)
      throw *invocation.refused;
    return invocation.action ? invocation.action() : cli::kExitUsage;
  } catch (const UsageError& e) {
    cli::warn(e.message);
    return cli::kExitUsage;
  } catch (const leasehold::Error& e) {
    if (e.code() == leasehold::condition::usage) {
      cli::warn(e.what());
      return cli::kExitUsage;
    }
    cli::exit_unavailable(e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = leasehold::cli;
  CLI::App app{
      "leasehold: distributed leases on Redis.\n"
      "Run a command under a lease (a distributed flock), run a command once per interval across\n"
      "hosts, inspect, watch and force-release leases, check a Redis for leases."};
  app.set_version_flag("--version", std::string("leasehold ") + leasehold::version);
  app.require_subcommand(1);
  app.failure_message(shown_failure);  // before the subcommands are added: they inherit it
  cli::show_library_log();

  cli::Invocation invocation;
  add_global_options(app, invocation.globals);
  // In the order --help lists them.
  cli::add_run(app, invocation);
  cli::add_cron(app, invocation);
  cli::add_status(app, invocation);
  cli::add_list(app, invocation);
  cli::add_release(app, invocation);
  cli::add_acquire(app, invocation);
  cli::add_hold(app, invocation);
  cli::add_extend(app, invocation);
  cli::add_top(app, invocation);
  cli::add_doctor(app, invocation);
  cli::add_elect(app, invocation);
  cli::add_leader(app, invocation);
  cli::add_fence(app, invocation);

  // `run NAME... -- COMMAND`: the words before the first "--" are parsed alone when they make a
  // run, and the words after it are its COMMAND, never parsed (an option of COMMAND is not
  // leasehold's). Any other command line is parsed whole.
  const auto separator = std::find(argv + 1, argv + argc, std::string_view("--"));
  invocation.separated = separator != argv + argc;
  if (invocation.separated) {
    invocation.after_separator.assign(separator + 1, argv + argc);
    if (parses_as_run(app, invocation, static_cast<int>(separator - argv), argv))
      return exit_code_of(invocation);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the error
    return code == 0 ? 0 : cli::kExitUsage;
  }
  return exit_code_of(invocation);
}
