// leasehold doctor: the real binary against real redis-servers, each configured to be fit or unfit
// for leases in one way.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "build_paths.hpp"
#include "minimal_acl.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

extern char** environ;

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One finished run of the leasehold binary: its exit code and what it printed.
struct CliRun {
  int exit_code = -1;  // 128 + signal when killed; -1 when it did not end in time
  std::string out;
  std::string err;
};

CliRun run_cli(std::vector<std::string> args, const std::string& dir) {
  static int counter = 0;
  const std::string id = std::to_string(++counter);
  const std::string out_path = dir + "/doctor" + id + ".out";
  const std::string err_path = dir + "/doctor" + id + ".err";
  args.insert(args.begin(), testing::build_paths::cli);
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CliRun run;
  if (spawned != 0)
    return run;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return run;
    }
    std::this_thread::sleep_for(5ms);  // polling against a deadline
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

// The lines of `text` that start with `level` ("problem", "warning", "ok").
std::vector<std::string> lines_at(const std::string& text, const std::string& level) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with(level + " "))
      found.push_back(line);
  return found;
}

class CliDoctorTest : public testing::SharedServerTest {
 protected:
  // leasehold --redis URL doctor ARGS...
  static CliRun doctor(const std::string& url, std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"--redis", url, "doctor"});
    return run_cli(std::move(args), server_->dir());
  }
  static bool has_scratch_keys(const RedisServer& server) {
    return !server.command({"KEYS", "*:doctor:*"}).elements.empty();
  }
};

TEST_F(CliDoctorTest, AFitServerExits0AndNamesNoProblem) {
  const CliRun run = doctor(server_->unix_url());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(lines_at(run.out, "problem").empty()) << run.out;
  EXPECT_NE(run.out.find("ok       version: Redis "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ok       maxmemory-policy is noeviction"), std::string::npos) << run.out;
  for (const std::string check : {"locks:", "waiting:", "notifications:", "observing:", "tracking:",
                                  "scripts:", "clock:", "round trip:"})
    EXPECT_NE(run.out.find("ok       " + check), std::string::npos) << check << "\n" << run.out;
  // The test server keeps nothing on disk: a warning, not a problem.
  EXPECT_NE(run.out.find("warning  persistence: none"), std::string::npos) << run.out;
  EXPECT_FALSE(has_scratch_keys(*server_)) << "doctor left its scratch key behind";
}

// A server whose sharded pub/sub is taken away, as on Redis 6: in Redis 6 mode the probes are
// the plain commands that mode sends, and forcing the mode on a newer server is a warning.
TEST_F(CliDoctorTest, InRedis6ModeTheProbesArePlainPubSubAndForcingItIsAWarning) {
  RedisServer::Options options;
  for (const char* command : {"SPUBLISH", "SSUBSCRIBE", "SUNSUBSCRIBE"})
    options.extra_args.insert(options.extra_args.end(), {"--rename-command", command, ""});
  RedisServer server(options);
  const CliRun run = doctor("unix://" + server.socket_path() + "?compat=redis6");
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(lines_at(run.out, "problem").empty()) << run.out;
  EXPECT_NE(run.out.find("warning  version: Redis 7"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("drop compat=redis6"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ok       notifications:"), std::string::npos) << run.out;

  // Without the mode, the sharded probes find nothing to run: waiters would only poll.
  const CliRun sharded = doctor("unix://" + server.socket_path());
  EXPECT_NE(sharded.out.find("warning  notifications: the server does not support SPUBLISH"),
            std::string::npos)
      << sharded.out;
}

TEST_F(CliDoctorTest, AnEvictingPolicyIsAProblemThatExits1) {
  RedisServer server;
  for (const std::string policy : {"allkeys-lru", "volatile-ttl"}) {
    ASSERT_EQ(server.command({"CONFIG", "SET", "maxmemory-policy", policy}).str, "OK");
    const CliRun run = doctor(server.unix_url());
    EXPECT_EQ(run.exit_code, 1) << policy << "\n" << run.out << run.err;
    const auto problems = lines_at(run.out, "problem");
    ASSERT_EQ(problems.size(), 1u) << run.out;
    EXPECT_EQ(problems[0].find("problem  maxmemory-policy is " + policy + ": Redis may evict"), 0u)
        << problems[0];
    EXPECT_NE(problems[0].find("CONFIG SET maxmemory-policy noeviction"), std::string::npos)
        << problems[0];
    // allkeys-* evicts keys without a TTL too: fence records, election terms.
    EXPECT_EQ(problems[0].find("election terms") != std::string::npos,
              policy.starts_with("allkeys-"))
        << problems[0];
  }
}

// As on a managed server that refuses TIME in scripts: an ACL that forbids TIME forbids it
// within scripts too.
TEST_F(CliDoctorTest, AScriptThatMayNotCallTimeIsAProblem) {
  const std::string user = "doctor-notime-" + std::to_string(unique_number());
  ASSERT_EQ(
      server_->command({"ACL", "SETUSER", user, "on", ">secret", "~*", "&*", "+@all", "-time"}).str,
      "OK");
  const CliRun run =
      doctor("redis://" + user + ":secret@127.0.0.1:" + std::to_string(server_->port()));
  server_->command({"ACL", "DELUSER", user});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("problem  scripts: a script may not call TIME"), std::string::npos)
      << run.out;
  EXPECT_FALSE(has_scratch_keys(*server_));
}

TEST_F(CliDoctorTest, AUserWithoutEvalIsAProblemThatNamesThePermissionToAdd) {
  const std::string user = "doctor-noeval-" + std::to_string(unique_number());
  ASSERT_EQ(server_
                ->command({"ACL", "SETUSER", user, "on", ">secret", "~*", "&*", "+@all", "-eval",
                           "-evalsha"})
                .str,
            "OK");
  const CliRun run =
      doctor("redis://" + user + ":secret@127.0.0.1:" + std::to_string(server_->port()));
  server_->command({"ACL", "DELUSER", user});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const auto problems = lines_at(run.out, "problem");
  ASSERT_EQ(problems.size(), 1u) << run.out;
  EXPECT_NE(problems[0].find("locks: user '" + user + "' may not run EVAL, EVALSHA"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("ACL SETUSER " + user + " +eval +evalsha"), std::string::npos)
      << problems[0];
  EXPECT_FALSE(has_scratch_keys(*server_));
}

// Without SET there is no scratch string to try INCR on (it would create a key): INCR is left
// untried, a warning that says what a refusal would mean, not that waiting fails.
TEST_F(CliDoctorTest, ACommandLeftUntriedIsAWarningThatSaysItWasNotChecked) {
  const std::string user = "doctor-noset-" + std::to_string(unique_number());
  ASSERT_EQ(
      server_->command({"ACL", "SETUSER", user, "on", ">secret", "~*", "&*", "+@all", "-set"}).str,
      "OK");
  const CliRun run =
      doctor("redis://" + user + ":secret@127.0.0.1:" + std::to_string(server_->port()));
  server_->command({"ACL", "DELUSER", user});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const auto problems = lines_at(run.out, "problem");
  ASSERT_EQ(problems.size(), 1u) << run.out;
  EXPECT_NE(problems[0].find("locks: user '" + user + "' may not run SET"), std::string::npos)
      << problems[0];
  EXPECT_NE(run.out.find("\nwarning  waiting: INCR not checked (SET made no scratch key): if "
                         "refused, waiting in turn fails"),
            std::string::npos)
      << run.out;
  EXPECT_FALSE(has_scratch_keys(*server_));
}

// The minimal ACL of docs/locks.md (with waiting) is enough for leases; what it may not read
// (INFO, CONFIG) is a warning that says so, not a failure of doctor.
TEST_F(CliDoctorTest, TheDocumentedMinimalAclIsUsableAndWhatItCannotReadIsAWarning) {
  const std::string user = "doctor-locker-" + std::to_string(unique_number());
  const std::vector<std::string> acl = testing::waiting_acl_setuser(user, "secret");
  ASSERT_EQ(server_->command(acl).str, "OK");
  const std::string url =
      "redis://" + user + ":secret@127.0.0.1:" + std::to_string(server_->port());
  const CliRun run = doctor(url);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(lines_at(run.out, "problem").empty()) << run.out;
  EXPECT_NE(run.out.find("warning  maxmemory-policy: could not be checked (CONFIG GET is not "
                         "permitted to user '" +
                         user + "')"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("ok       locks: user '" + user + "' may run"), std::string::npos)
      << run.out;
  // Observing is not in it: warnings that name the grants.
  EXPECT_NE(run.out.find("warning  observing: user '" + user + "' may not run HSET, HGET, HMGET"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("allow it: ACL SETUSER " + user +
                         " +client|id +client|tracking +client|caching +subscribe"),
            std::string::npos)
      << run.out;
  // Another prefix is outside its key and channel patterns.
  const CliRun elsewhere = run_cli({"--redis", url, "--prefix", "other", "doctor"}, server_->dir());
  server_->command({"ACL", "DELUSER", user});
  EXPECT_EQ(elsewhere.exit_code, 1) << elsewhere.out << elsewhere.err;
  EXPECT_NE(elsewhere.out.find("ACL SETUSER " + user + " ~other:*"), std::string::npos)
      << elsewhere.out;
  EXPECT_NE(elsewhere.out.find("ACL SETUSER " + user + " &other:*"), std::string::npos)
      << elsewhere.out;
}

TEST_F(CliDoctorTest, SafeFailoverWithoutTheReplicasItWaitsForIsAProblem) {
  const CliRun run =
      doctor(server_->tcp_url() + (server_->tcp_url().find('?') == std::string::npos ? "?" : "&") +
             "safe_failover=1&replica_acks=1");
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("problem  replicas: none connected, and safe failover waits for "
                         "replica_acks=1: every grant and extension fails until 1 is connected"),
            std::string::npos)
      << run.out;
  // Without it, no replica is no problem.
  EXPECT_NE(doctor(server_->tcp_url()).out.find("ok       replicas: none connected\n"),
            std::string::npos);
}

TEST_F(CliDoctorTest, AppendfsyncAlwaysIsPersistenceThatKeepsLeases) {
  RedisServer server(RedisServer::Options{{"--appendonly", "yes", "--appendfsync", "always"}});
  const CliRun run = doctor(server.unix_url());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("ok       persistence: AOF with appendfsync always"), std::string::npos)
      << run.out;
}

TEST_F(CliDoctorTest, AServerNobodyListensOnExits69WithAOneLineReason) {
  const int port = testing::free_port();
  const CliRun run = doctor("redis://127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(run.exit_code, 69) << run.out << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_NE(run.err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST_F(CliDoctorTest, JsonHasTheServerAndEveryFinding) {
  const CliRun text = doctor(server_->unix_url());
  const CliRun run = doctor(server_->unix_url(), {"--json"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report.at("server"), server_->socket_path());
  const auto& findings = report.at("findings");
  ASSERT_TRUE(findings.is_array());
  // The same findings as the text, one per line.
  EXPECT_EQ(findings.size(),
            static_cast<std::size_t>(std::count(text.out.begin(), text.out.end(), '\n')));
  std::set<std::string> checks;
  for (const auto& finding : findings) {
    checks.insert(finding.at("check").get<std::string>());
    EXPECT_TRUE(std::set<std::string>({"ok", "warning", "problem"})
                    .contains(finding.at("level").get<std::string>()))
        << finding;
    EXPECT_FALSE(finding.at("message").get<std::string>().empty()) << finding;
  }
  for (const char* check :
       {"version", "locks", "waiting", "notifications", "observing", "tracking", "scripts", "wait",
        "maxmemory-policy", "persistence", "replicas", "clock", "round-trip"})
    EXPECT_TRUE(checks.contains(check)) << check << "\n" << run.out;
}

// docs/cli.md is the manual: doctor and each of its options are in it.
TEST_F(CliDoctorTest, TheManualDocumentsDoctorAndItsOptions) {
  const std::string manual =
      read_file(std::string(testing::build_paths::source_dir) + "/docs/cli.md");
  EXPECT_NE(manual.find("## `leasehold doctor"), std::string::npos);
  const CliRun help = run_cli({"doctor", "--help"}, server_->dir());
  ASSERT_EQ(help.exit_code, 0);
  // The option lines: "  -h,--help   Print ...", "  --json   print JSON".
  std::istringstream lines(help.out);
  int options = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("  -"))
      continue;
    const std::string names = line.substr(2, line.find(' ', 2) - 2);
    const std::string name = names.substr(names.rfind(',') + 1);
    if (name != "--help") {
      EXPECT_NE(manual.find("doctor [" + name), std::string::npos) << name;
      ++options;
    }
  }
  EXPECT_GE(options, 1) << help.out;  // --json at least
}

}  // namespace
}  // namespace leasehold
