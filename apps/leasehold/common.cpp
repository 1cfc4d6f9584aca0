#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "displayable.hpp"

extern char** environ;

namespace leasehold::cli {

void say(const Globals& globals, const std::string& message) {
  if (!globals.quiet)
    warn(message);
}

void chat(const Globals& globals, const std::string& message) {
  if (globals.verbose && !globals.quiet)
    warn(message);
}

void warn(const std::string& message) {
  std::cerr << "leasehold: " + displayable(message) + "\n" << std::flush;
}

void show_library_log() {
  set_log_handler([](LogLevel level, std::string_view message) {
    if (level < LogLevel::warning)
      return;
    std::cerr << "leasehold " + std::string(to_string(level)) + ": " + displayable(message) + "\n"
              << std::flush;
  });
}

namespace {

// Exits at once, without destroying the program's statics: a client's I/O thread may still be
// finishing what its close() drained (an acquire's release), and would read them as they go.
[[noreturn]] void exit_now(int code) {
  std::cout.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace

void exit_unavailable(const std::exception& e) {
  std::string reason = e.what();
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  warn("Redis is unavailable: " + reason);
  exit_now(kExitUnavailable);
}

std::vector<ForeignKey> keys_of_another_type(const Globals& globals, Client& redis,
                                             const std::string& name) {
  const auto run = run_lock(globals, std::chrono::milliseconds(1000));
  const auto permits = run_semaphore(globals, std::chrono::milliseconds(1000), 1);
  // The run's and the permits' keys share a hash slot; the cron job's take two others, and the
  // election's one more.
  std::vector<FindForeignKeys> batch;
  std::vector<LeaseKey> run_keys = lease_keys(run, name);
  for (LeaseKey& key : lease_keys(permits, name))
    run_keys.push_back(std::move(key));
  batch.push_back(foreign_keys(std::move(run_keys)));
  // A single server's one fence counter, every name's (a slot of its own).
  batch.push_back(foreign_keys({{run.server_fence_counter_key(), "string"}}));
  for (std::vector<LeaseKey>& keys : cron::once_per_interval_keys(name, globals.prefix))
    batch.push_back(foreign_keys(std::move(keys)));
  // The election's keys (leasehold elect) share a slot of their own.
  batch.push_back(
      foreign_keys(lease_keys(elect_election(globals, std::chrono::milliseconds(1000)), name)));
  std::vector<ForeignKey> found;
  for (Result<std::vector<ForeignKey>>& result : redis.process(batch)) {
    if (!result && result.error() == errc::no_permission)
      continue;  // a user without EVAL on these keys: the commands say the rest
    for (ForeignKey& foreign : result.value())
      found.push_back(std::move(foreign));
  }
  return found;
}

std::string foreign_key_text(const ForeignKey& foreign) {
  return foreign.expected.key + " holds a " + foreign.type + " (leasehold keeps a " +
         std::string(foreign.expected.type) + " there)";
}

std::string wrong_type_message(const Globals& globals, Client& redis, const std::string& name,
                               const std::exception& e) {
  std::vector<ForeignKey> found;
  try {
    found = keys_of_another_type(globals, redis, name);
  } catch (const Error&) {
    // Redis went away meanwhile: the message says what the server said.
  }
  std::string what;
  for (const ForeignKey& key : found)
    what += (what.empty() ? "" : "; ") + foreign_key_text(key);
  if (what.empty())
    what = std::string("a key of '") + name + "' holds another type of value: " + e.what();
  return what +
         ". Something else uses the name's keys: remove them with `leasehold release --force " +
         name + "` (it deletes them, whatever they hold), or give leasehold another --prefix.";
}

void exit_failure(const Globals& globals, Client& redis, const std::string& name,
                  const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  if (error == nullptr || error->code() != errc::wrong_type)
    exit_unavailable(e);
  warn(wrong_type_message(globals, redis, name, e));
  exit_now(kExitDataErr);
}

std::string loss_reason(std::error_code cause) {
  return cause ? "could not extend it: " + cause.message() : "it expired or was taken over";
}

void exit_raw_key_failure(Client& redis, const std::string& key, const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  if (error == nullptr || error->code() != errc::wrong_type)
    exit_unavailable(e);
  std::string type = "value of another type";
  try {
    type = "a " + redis.process(Command{"TYPE", key}).str;
  } catch (const Error&) {
    // Redis went away meanwhile: the message says what it knows.
  }
  warn(key + " holds " + type +
       ", not a lock (a lock key holds a string): --raw-key names a key that other clients "
       "lock; check the key's name");
  exit_now(kExitDataErr);
}

Client connect_or_exit(const Globals& globals, std::shared_ptr<Observer> observer) {
  try {
    ClientOptions options;
    options.client_name = "leasehold-cli";
    options.tls = globals.tls;
    options.observer = std::move(observer);
    RedisUrl url = RedisUrl::parse(globals.redis_url);
    // The sentinels' password may stay out of the URL (and so out of `ps`).
    const char* sentinel_password = std::getenv("LEASEHOLD_SENTINEL_PASSWORD");
    if (url.transport == RedisUrl::Transport::sentinel && !url.has_sentinel_password &&
        sentinel_password != nullptr && *sentinel_password != '\0') {
      url.sentinel_password = sentinel_password;
      url.has_sentinel_password = true;
    }
    if (globals.replica_acks)
      url.replica_acks = *globals.replica_acks;
    Client client(std::move(url), options);
    client.connect();
    return client;
  } catch (const Error& e) {
    if (e.code() == condition::usage) {
      warn(e.what());
      exit_now(kExitUsage);
    }
    exit_unavailable(e);
  }
}

MetricsFile::MetricsFile(std::optional<std::string> path) : path_(std::move(path)) {
  if (path_)
    metrics_ = std::make_shared<Metrics>();
}

void MetricsFile::write() const noexcept {
  if (!path_)
    return;
  std::filesystem::path temporary;
  try {
    const std::filesystem::path target(*path_);
    temporary = target;
    temporary += ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << metrics_->prometheus_text();
      out.flush();
      if (!out)
        throw std::runtime_error("could not write " + temporary.string());
    }
    std::filesystem::rename(temporary, target);  // atomic: a reader sees the old or the new
  } catch (const std::exception& e) {
    std::error_code ignored;
    if (!temporary.empty())
      std::filesystem::remove(temporary, ignored);
    if (!warned_)
      warn(std::string("--metrics-file: ") + e.what() + " (the command goes on)");
    warned_ = true;
  }
}

std::string command_label(const std::vector<std::string>& command) {
  constexpr std::size_t kMax = 64;
  std::string label;
  for (const std::string& word : command)
    label += (label.empty() ? "" : " ") + word;
  if (label.size() > kMax) {
    label.resize(kMax - 3);
    label += "\xe2\x80\xa6";  // …
  }
  return label;
}

sigset_t forwarded_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGCHLD);
  return set;
}

void block_forwarded_signals() {
  const sigset_t set = forwarded_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

namespace {

// The forked child's way to its command. Its own process group (so a lost lease can stop
// everything it started), default signal dispositions and an empty mask (leasehold blocks the
// signals it forwards); it tells the watchdog its group itself, before the command runs, so that
// leasehold killed at any moment after the fork leaves no command unwatched. Forked from a process
// with threads: async-signal-safe calls only, and _exit.
[[noreturn]] void become_command(const std::vector<char*>& argv, const std::vector<char*>& envp,
                                 const sigset_t& forwarded, const Watchdog& watchdog,
                                 int exec_error) {
  ::setpgid(0, 0);
  struct sigaction original {};
  original.sa_handler = SIG_DFL;
  for (int signal = 1; signal < NSIG; ++signal)
    if (sigismember(&forwarded, signal) == 1)
      ::sigaction(signal, &original, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  tell_group(watchdog, ::getpid());
  ::execvpe(argv[0], argv.data(), envp.data());
  const int error = errno;
  [[maybe_unused]] const ssize_t written = ::write(exec_error, &error, sizeof error);
  ::_exit(127);
}

}  // namespace

Child spawn_child(const std::vector<std::string>& command,
                  const std::vector<std::pair<std::string, std::string>>& extra_env,
                  std::chrono::milliseconds kill_after) {
  std::vector<std::string> env_storage;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view line(*entry);
    bool replaced = false;
    for (const auto& [key, value] : extra_env)
      if (line.starts_with(key + "="))
        replaced = true;
    if (!replaced)
      env_storage.emplace_back(line);
  }
  for (const auto& [key, value] : extra_env)
    env_storage.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_storage)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  Child child;
  child.watchdog = start_watchdog(kill_after);
  // Reports a failed exec: close-on-exec, so the read below ends at the exec, as posix_spawn's
  // return does.
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) {
    child.spawn_error = errno;
    dismiss(child.watchdog);
    return child;
  }
  const sigset_t forwarded = forwarded_signals();
  child.pid = ::fork();
  if (child.pid == 0)
    become_command(argv, envp, forwarded, child.watchdog, exec_error[1]);
  ::close(exec_error[1]);
  if (child.pid < 0) {
    child.spawn_error = errno;
  } else {
    int error = 0;
    ssize_t got = 0;
    while ((got = ::read(exec_error[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (got == sizeof error) {
      child.spawn_error = error;
      while (::waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  ::close(exec_error[0]);
  if (child.spawn_error != 0) {
    child.pid = -1;
    dismiss(child.watchdog);
  }
  return child;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status))
    return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status))
    return 128 + WTERMSIG(wait_status);
  return 1;
}

int report_spawn_failure(const std::string& program, int error) {
  if (error == ENOENT) {
    warn(program + ": command not found");
    return kExitNotFound;
  }
  warn(program + ": cannot execute: " + std::strerror(error));
  return kExitCannotExecute;
}

RwLock<std::string> run_lock(const Globals& globals, std::chrono::milliseconds ttl) {
  // A waiting exclusive run registers its intent, so a stream of shared runs cannot starve it;
  // an exclusive run gets a fencing number (LEASEHOLD_FENCE).
  return RwLock<std::string>("run", ttl, globals.prefix)
      .with_writer_preference(std::chrono::milliseconds(1000))
      .with_fencing();
}

Semaphore<std::string> run_semaphore(const Globals& globals, std::chrono::milliseconds ttl,
                                     std::uint32_t permits) {
  return Semaphore<std::string>("run", permits, ttl, globals.prefix).with_fencing();
}

Lock<std::string> cron_lock(const Globals& globals, std::chrono::milliseconds ttl) {
  return Lock<std::string>("cron", ttl, globals.prefix);
}

Election<std::string> elect_election(const Globals& globals, std::chrono::milliseconds ttl) {
  return Election<std::string>("elect", ttl, globals.prefix);
}

}  // namespace leasehold::cli
