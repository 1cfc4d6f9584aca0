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

// --raw-key KEY: another client's lock on exactly KEY (docs/interop.md).
CLI::Option* add_raw_key(CLI::App& app, std::optional<std::string>& key) {
  return app.add_option("--raw-key", key,
                        "instead of NAME, the lock on exactly KEY as other clients take it "
                        "(redis-py, node-redlock: SET NX PX with a random value)");
}

// The flags acquire and hold share.
struct AcquireFlags {
  DurationFlag wait, ttl, max_time;
  bool json = false, env = false;
};
CLI::App* add_acquire_command(CLI::App& app, const char* name, const char* description,
                              leasehold::cli::AcquireOptions& options, AcquireFlags& flags) {
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("NAME", options.name, "the lease's name (none with --raw-key)");
  add_raw_key(*command, options.raw_key);
  command->add_flag("-s,--shared", options.shared, "a shared lease (with other --shared ones)");
  auto* nonblock =
      command->add_flag("-n,--nonblock", options.nonblock, "fail at once if it is held");
  add_duration(*command, "-w,--wait", flags.wait, "give up after waiting this long")
      ->excludes(nonblock);
  add_duration(*command, "-t,--ttl", flags.ttl, "the lease's TTL (default: 30s)");
  command
      ->add_option("-E,--conflict-exit-code", options.conflict_exit_code,
                   "exit code when the lease could not be taken (default: 1)")
      ->check(CLI::Range(0, 255));
  auto* json = command->add_flag("--json", flags.json, "print the token as JSON");
  command->add_flag("--env", flags.env, "print shell exports of LEASEHOLD_TOKEN and LEASEHOLD_NAME")
      ->excludes(json);
  return command;
}

// The flags extend and release --token share.
CLI::Option* add_token_flags(CLI::App& command, leasehold::cli::TokenOptions& options) {
  if (const char* env = std::getenv("LEASEHOLD_TOKEN"))
    options.token = env;
  command
      .add_option("-E,--conflict-exit-code", options.conflict_exit_code,
                  "exit code when the token no longer holds the lease (default: 1)")
      ->check(CLI::Range(0, 255));
  return command.add_option("--token", options.token,
                            "the token `leasehold acquire` printed (default: $LEASEHOLD_TOKEN)");
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
  run_app->add_option("NAME", run.name, "the lease's name (none with --raw-key)");
  run_app->add_option("COMMAND", run.command, "the command and its arguments (after --)");
  std::optional<std::string> run_raw_key;
  add_raw_key(*run_app, run_raw_key);
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
  DurationFlag cron_max_time, cron_kill_after;
  add_duration(*cron_app, "--max-time", cron_max_time,
               "stop a run (SIGTERM, then SIGKILL) once it has run this long");
  add_duration(*cron_app, "--kill-after", cron_kill_after,
               "SIGKILL a run this long after the SIGTERM that stops it (default: 5s)");
  cron_app->add_option("--metrics-file", cron.metrics_file,
                       "write Prometheus metrics to PATH (atomically) after every tick");

  // status, list, release
  std::vector<std::string> status_names;
  bool status_json = false;
  CLI::App* status_app =
      app.add_subcommand("status", "show who holds the leases NAME..., and for how long");
  status_app->add_option("NAME", status_names, "run or cron names");
  std::vector<std::string> status_raw_keys;
  status_app->add_option("--raw-key", status_raw_keys,
                         "instead of NAMEs, the lock on exactly KEY (other clients' locks)");
  status_app->add_flag("--json", status_json, "print JSON");

  std::string list_pattern;
  bool list_json = false;
  CLI::App* list_app = app.add_subcommand("list", "list every lease under the prefix");
  list_app->add_option("PATTERN", list_pattern, "only names matching this glob");
  list_app->add_flag("--json", list_json, "print JSON");

  cli::TokenOptions released;
  bool force = false;
  CLI::App* release_app = app.add_subcommand(
      "release",
      "give back the lease of a token (--token), or delete a lease whoever holds it (--force)");
  release_app->add_option("NAME", released.name, "the lease's name (none with --raw-key)");
  add_raw_key(*release_app, released.raw_key);
  auto* release_token = add_token_flags(*release_app, released);
  release_app->add_flag("--force", force, "an operator's tool: delete it regardless of its holder")
      ->excludes(release_token);

  // acquire, hold, extend
  cli::AcquireOptions acquired, held;
  AcquireFlags acquire_flags, hold_flags;
  CLI::App* acquire_app = add_acquire_command(
      app, "acquire",
      "take the lease NAME, print its token and leave it to its TTL (extend and release it by "
      "the token)",
      acquired, acquire_flags);
  CLI::App* hold_app = add_acquire_command(
      app, "hold",
      "take the lease NAME, print its token and keep it until SIGTERM, SIGINT or the end of "
      "stdin; exit 75 if it is lost",
      held, hold_flags);
  add_duration(*hold_app, "--max-time", hold_flags.max_time,
               "give it back once held this long, and exit 124");
  cli::TokenOptions extended;
  DurationFlag extend_ttl;
  CLI::App* extend_app = app.add_subcommand(
      "extend",
      "restart the TTL of the lease of a token; exit with the conflict code if it is gone");
  extend_app->add_option("NAME", extended.name, "the lease's name (none with --raw-key)");
  add_raw_key(*extend_app, extended.raw_key);
  add_token_flags(*extend_app, extended);
  add_duration(*extend_app, "-t,--ttl", extend_ttl, "the lease's new TTL (default: 30s)");

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
      if (run_raw_key) {
        // No NAME with --raw-key: the first word after it starts COMMAND.
        if (!run.name.empty())
          run.command.insert(run.command.begin(), run.name);
        run.name.clear();
        run.raw_key = run_raw_key;
      }
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
      if (cron_max_time.given())
        cron.max_time = cli::require_duration("--max-time", cron_max_time.text);
      if (cron_kill_after.given())
        cron.kill_after = cli::require_duration("--kill-after", cron_kill_after.text);
      return cli::cron(globals, cron);
    }
    if (status_app->parsed()) {
      if (!status_raw_keys.empty() && !status_names.empty())
        throw UsageError{"status: give NAMEs or --raw-key KEYs, not both"};
      if (!status_raw_keys.empty())
        return cli::raw_key_status(globals, status_raw_keys, status_json);
      return cli::status(globals, status_names, status_json);
    }
    if (list_app->parsed())
      return cli::list(globals, list_pattern, list_json);
    if (release_app->parsed()) {
      if (force) {
        if (released.raw_key && !released.name.empty())
          throw UsageError{"release: give NAME or --raw-key KEY, not both"};
        return released.raw_key ? cli::release_raw_key_force(globals, *released.raw_key)
                                : cli::release_force(globals, released.name);
      }
      if (released.token.empty())
        throw UsageError{
            "release: give --token T (or set LEASEHOLD_TOKEN) to give back your lease, or "
            "--force to delete it whoever holds it"};
      return cli::release_token(globals, released);
    }
    const auto acquire_options = [](cli::AcquireOptions& options, const AcquireFlags& flags) {
      if (flags.wait.given())
        options.wait = cli::require_duration("--wait", flags.wait.text);
      if (flags.ttl.given())
        options.ttl = cli::require_duration("--ttl", flags.ttl.text);
      if (flags.max_time.given())
        options.max_time = cli::require_duration("--max-time", flags.max_time.text);
      options.format = flags.json  ? cli::TokenFormat::json
                       : flags.env ? cli::TokenFormat::env
                                   : cli::TokenFormat::plain;
    };
    if (acquire_app->parsed()) {
      acquire_options(acquired, acquire_flags);
      return cli::acquire(globals, acquired);
    }
    if (hold_app->parsed()) {
      acquire_options(held, hold_flags);
      return cli::hold(globals, held);
    }
    if (extend_app->parsed()) {
      if (extend_ttl.given())
        extended.ttl = cli::require_duration("--ttl", extend_ttl.text);
      return cli::extend_token(globals, extended);
    }
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
