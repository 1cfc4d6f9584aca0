// The leasehold command: a distributed flock(1), cron across hosts, and lease inspection.
// docs/cli.md is its manual.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli.hpp"

namespace {

using leasehold::cli::UsageError;

// Collects a duration flag as text; it is parsed (and refused with exit 64) after CLI11 is done.
struct DurationFlag {
  std::string text;
  CLI::Option* option = nullptr;
  bool given() const { return option != nullptr && option->count() > 0; }
};

CLI::Option* add_duration(CLI::App& app, const std::string& names, DurationFlag& flag,
                          const std::string& help) {
  flag.option = app.add_option(names, flag.text, help + " (250ms, 30s, 1.5s, 5m, 1h)");
  return flag.option;
}

// The options every subcommand takes, some from the environment.
void add_global_options(CLI::App& app, leasehold::cli::Globals& globals) {
  if (const char* env = std::getenv("LEASEHOLD_REDIS_URL"))
    globals.redis_url = env;
  else
    globals.redis_url = "redis://127.0.0.1:6379";
  app.add_option("--redis", globals.redis_url,
                 "Redis URL: redis://[user[:password]@]host[:port][/db], unix:///path[?db=N] or "
                 "redis-cluster://[user[:password]@]host:port[,host:port...]; rediss:// and "
                 "rediss-cluster:// for TLS (default: $LEASEHOLD_REDIS_URL, then "
                 "redis://127.0.0.1:6379)");
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
  app.add_flag("-v,--verbose", globals.verbose, "say what happens: waiting, holders, leases");
  app.add_flag("-q,--quiet", globals.quiet, "say nothing but errors");
}

// Runs a parsed subcommand: its exit code, or the one its error maps to.
template <class Subcommand>
int exit_code_of(Subcommand subcommand) {
  namespace cli = leasehold::cli;
  try {
    return subcommand();
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
  return cli::kExitUsage;
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

  leasehold::cli::Globals globals;
  add_global_options(app, globals);

  // run
  cli::RunOptions run;
  bool exclusive = false;
  DurationFlag wait, ttl, kill_after, max_time;
  CLI::App* run_app = app.add_subcommand(
      "run", "run COMMAND while holding the lease NAME; release it when COMMAND ends");
  run_app->add_option("NAME", run.name, "the lease's name")->required();
  run_app->add_option("COMMAND", run.command, "the command and its arguments (after --)")
      ->required();
  auto* exclusive_flag =
      run_app->add_flag("-x,--exclusive", exclusive, "take the lease alone (the default)");
  auto* shared_flag =
      run_app->add_flag("-s,--shared", run.shared, "share the lease with other --shared runs")
          ->excludes(exclusive_flag);
  run_app
      ->add_option("--limit", run.limit,
                   "let at most N runs hold NAME at once (a counting semaphore, apart from the "
                   "exclusive and shared leases of NAME)")
      ->check(CLI::Range(1, 1'000'000))
      ->excludes(shared_flag)
      ->excludes(exclusive_flag);
  auto* nonblock = run_app->add_flag("-n,--nonblock", run.nonblock, "fail at once if it is held");
  add_duration(*run_app, "-w,--wait", wait, "give up after waiting this long")->excludes(nonblock);
  run_app
      ->add_option("-E,--conflict-exit-code", run.conflict_exit_code,
                   "exit code when the lease could not be taken (default: 1)")
      ->check(CLI::Range(0, 255));
  add_duration(*run_app, "-t,--ttl", ttl,
               "the lease's TTL, extended every third of it while COMMAND runs (default: 30s)");
  add_duration(*run_app, "--kill-after", kill_after,
               "on a lost lease, SIGKILL this long after SIGTERM (default: 5s)");
  add_duration(*run_app, "--max-time", max_time,
               "end COMMAND like a lost lease once it has run this long, and exit 124");
  run_app->add_option("--metrics-file", run.metrics_file,
                      "write Prometheus metrics to PATH (atomically) when the lease is taken and "
                      "at the end");

  // cron
  cli::CronOptions cron;
  DurationFlag every, lease;
  CLI::App* cron_app = app.add_subcommand(
      "cron",
      "run COMMAND at startup and then every interval, at most once per interval "
      "across every host running the same NAME");
  cron_app->add_option("NAME", cron.name, "the job's name")->required();
  cron_app->add_option("COMMAND", cron.command, "the command and its arguments (after --)")
      ->required();
  add_duration(*cron_app, "--every", every, "the interval")->required();
  add_duration(*cron_app, "--lease", lease,
               "the lease taken at each tick, never released; shorter than the interval "
               "(default: the interval minus 10%, at least 1 s less)");
  cron_app->add_option("--mode", cron.mode, "at-least (default), after-finish or after-start")
      ->check(CLI::IsMember({"at-least", "after-finish", "after-start"}));
  cron_app->add_flag("--aligned", cron.aligned,
                     "name each interval by the Redis server's clock (immune to host clock skew)");
  long long ticks = 0;
  cron_app->add_option("--ticks", ticks, "stop after N ticks")->check(CLI::PositiveNumber);
  cron_app->add_option("--metrics-file", cron.metrics_file,
                       "write Prometheus metrics to PATH (atomically) after every tick");

  // status, list, release
  std::vector<std::string> status_names;
  bool status_json = false;
  CLI::App* status_app =
      app.add_subcommand("status", "show who holds the leases NAME..., and for how long");
  status_app->add_option("NAME", status_names, "run or cron names")->required();
  status_app->add_flag("--json", status_json, "print JSON");

  std::string list_pattern;
  bool list_json = false;
  CLI::App* list_app = app.add_subcommand("list", "list every lease under the prefix");
  list_app->add_option("PATTERN", list_pattern, "only names matching this glob");
  list_app->add_flag("--json", list_json, "print JSON");

  std::string release_name;
  bool force = false;
  CLI::App* release_app = app.add_subcommand(
      "release", "delete a lease whoever holds it (an operator's tool; needs --force)");
  release_app->add_option("NAME", release_name, "the run or cron name")->required();
  release_app->add_flag("--force", force, "yes, delete it regardless of its holder")->required();

  // top
  cli::TopOptions top;
  DurationFlag interval;
  CLI::App* top_app = app.add_subcommand(
      "top", "a live view of every lease under the prefix: holder, time left, readers, waiters");
  top_app->add_option("PATTERN", top.pattern, "only names matching this glob");
  add_duration(*top_app, "--interval", interval, "refresh every DUR (default: 1s)");
  top_app
      ->add_option("--sort", top.sort,
                   "name (default), left (least time left first) or held (longest held first)")
      ->check(CLI::IsMember({"name", "left", "held"}));
  top_app->add_flag("--once", top.once, "print one plain-text table and exit (no terminal needed)");
  top_app->add_flag("--json", top.json, "print one JSON array of the leases and exit");

  // doctor
  bool doctor_json = false;
  CLI::App* doctor_app = app.add_subcommand(
      "doctor", "check whether the Redis server (or cluster) of --redis is fit for leases");
  doctor_app->add_flag("--json", doctor_json, "print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the error
    return code == 0 ? 0 : cli::kExitUsage;
  }

  return exit_code_of([&]() -> int {
    if (globals.verbose && globals.quiet)
      throw UsageError{"--verbose and --quiet exclude each other"};
    if (run_app->parsed()) {
      if (wait.given())
        run.wait = cli::require_duration("--wait", wait.text);
      if (ttl.given())
        run.ttl = cli::require_duration("--ttl", ttl.text);
      if (kill_after.given())
        run.kill_after = cli::require_duration("--kill-after", kill_after.text);
      if (max_time.given())
        run.max_time = cli::require_duration("--max-time", max_time.text);
      return cli::run(globals, run);
    }
    if (cron_app->parsed()) {
      cron.every = cli::require_duration("--every", every.text);
      if (lease.given())
        cron.lease = cli::require_duration("--lease", lease.text);
      if (ticks > 0)
        cron.ticks = ticks;
      return cli::cron(globals, cron);
    }
    if (status_app->parsed())
      return cli::status(globals, status_names, status_json);
    if (list_app->parsed())
      return cli::list(globals, list_pattern, list_json);
    if (release_app->parsed())
      return cli::release_force(globals, release_name);
    if (top_app->parsed()) {
      if (interval.given())
        top.interval = cli::require_duration("--interval", interval.text);
      return cli::top(globals, top);
    }
    if (doctor_app->parsed())
      return cli::doctor(globals, doctor_json);
    return cli::kExitUsage;
  });
}
