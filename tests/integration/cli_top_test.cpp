// leasehold top: the real binary against a private redis-server, its live view in a real terminal
// (a tmux pane of a fixed size).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "redis_server.hpp"
#include "server_clock.hpp"

extern char** environ;

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

using testing::read_file;
using Process = testing::ChildProcess;

// A leasehold run that holds its lease until the test ends (its command outlives any test), and
// then ends as a user would end it: SIGTERM, which stops its command too.
class Holder : public testing::ChildProcess {
 public:
  using ChildProcess::ChildProcess;
  ~Holder() {
    if (pid() > 0) {
      signal(SIGTERM);
      wait(5s);
    }
  }
};

// Display columns of a UTF-8 line: one per character.
std::size_t columns_of(const std::string& line) {
  std::size_t columns = 0;
  for (const char c : line)
    columns += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return columns;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

class CliTopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<RedisServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  // Each test its own prefix: it sees its own leases only.
  void SetUp() override {
    static int counter = 0;
    prefix_ = "top" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  }

  // leasehold --redis <server> --prefix <the test's> ARGS...
  std::unique_ptr<Holder> cli(std::vector<std::string> args,
                              const RedisServer* server = nullptr) const {
    server = server ? server : server_.get();
    args.insert(args.begin(),
                {testing::build_paths::cli, "--redis", server->unix_url(), "--prefix", prefix_});
    return std::make_unique<Holder>(std::move(args), server_->dir());
  }
  // The arguments of `leasehold top` against the suite's server: --redis, --prefix, top, ARGS.
  std::vector<std::string> top_args(const std::vector<std::string>& args) const {
    std::vector<std::string> all{"--redis", server_->unix_url(), "--prefix", prefix_, "top"};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  std::string run_key(const std::string& name, const std::string& role) const {
    return prefix_ + ":RwLock:{run:" + name + "}:" + role;
  }
  std::string permits_key(const std::string& name) const {
    return prefix_ + ":Semaphore:{run:" + name + "}:h";
  }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }
  long long size_of(const std::string& sorted_set) const {
    return server_->command({"ZCARD", sorted_set}).integer;
  }

  std::string prefix_;
  static inline std::unique_ptr<RedisServer> server_;
};

// The rows of `top --json` for `name`.
std::vector<nlohmann::json> rows_of(const nlohmann::json& rows, const std::string& name) {
  std::vector<nlohmann::json> found;
  for (const auto& row : rows)
    if (row["name"] == name)
      found.push_back(row);
  return found;
}

TEST_F(CliTopTest, JsonListsEveryLeaseWithItsHolderReadersWaitersAndFence) {
  const std::uint64_t clock = testing::server_clock_us(*server_);
  auto holder = cli({"run", "deploy", "--", "sleep", "600"});
  ASSERT_TRUE(eventually([&] { return exists(run_key("deploy", "w")); }));
  auto waiter = cli({"run", "deploy", "--", "true"});
  ASSERT_TRUE(eventually([&] { return size_of(run_key("deploy", "w") + ":queue") == 1; }));
  auto reader1 = cli({"run", "-s", "catalog", "--", "sleep", "600"});
  auto reader2 = cli({"run", "-s", "catalog", "--", "sleep", "600"});
  ASSERT_TRUE(eventually([&] { return size_of(run_key("catalog", "r")) == 2; }));
  auto permit = cli({"run", "--limit", "1", "uploads", "--", "sleep", "600"});
  ASSERT_TRUE(eventually([&] { return size_of(permits_key("uploads")) == 1; }));
  auto permit_waiter = cli({"run", "--limit", "1", "uploads", "--", "true"});
  ASSERT_TRUE(eventually([&] { return size_of(permits_key("uploads") + ":queue") == 1; }));
  auto cron = cli({"cron", "--every", "1h", "--ticks", "1", "report", "--", "true"});
  ASSERT_EQ(cron->wait(), 0) << cron->err();  // its interval's lease stays, never released

  auto top = cli({"top", "--json"});
  ASSERT_EQ(top->wait(), 0) << top->err();
  const nlohmann::json rows = nlohmann::json::parse(top->out());
  ASSERT_TRUE(rows.is_array()) << top->out();
  EXPECT_EQ(rows.size(), 5u) << top->out();

  const auto deploy = rows_of(rows, "deploy");
  ASSERT_EQ(deploy.size(), 1u) << top->out();
  EXPECT_EQ(deploy[0]["kind"], "exclusive");
  EXPECT_TRUE(std::regex_match(deploy[0]["token"].get<std::string>(), std::regex("[0-9a-f]{8}")));
  EXPECT_GT(deploy[0]["ms_left"].get<long long>(), 0);
  EXPECT_LE(deploy[0]["ms_left"].get<long long>(), 30'000);
  EXPECT_EQ(deploy[0]["holder"]["pid"], holder->pid());
  EXPECT_EQ(deploy[0]["holder"]["label"], "sleep 600");
  EXPECT_EQ(deploy[0]["readers"], 0);
  EXPECT_EQ(deploy[0]["waiters"], 1);
  EXPECT_GE(deploy[0]["fence"].get<std::uint64_t>(), clock) << "the exclusive run's fence";

  const auto catalog = rows_of(rows, "catalog");
  ASSERT_EQ(catalog.size(), 2u) << top->out();
  std::set<long long> reader_pids;
  for (const auto& row : catalog) {
    EXPECT_EQ(row["kind"], "shared");
    EXPECT_EQ(row["readers"], 2);
    EXPECT_EQ(row["waiters"], 0);
    // No exclusive run of its own: the fence is the last its counter gave, a single server's
    // one counter of the prefix, which the permit's grant advanced last.
    EXPECT_EQ(row["fence"], rows_of(rows, "uploads").at(0)["fence"]) << "the prefix's counter";
    reader_pids.insert(row["holder"]["pid"].get<long long>());
  }
  EXPECT_EQ(reader_pids, (std::set<long long>{reader1->pid(), reader2->pid()}));

  const auto uploads = rows_of(rows, "uploads");
  ASSERT_EQ(uploads.size(), 1u) << top->out();
  EXPECT_EQ(uploads[0]["kind"], "permit");
  EXPECT_EQ(uploads[0]["holder"]["pid"], permit->pid());
  EXPECT_EQ(uploads[0]["waiters"], 1);
  EXPECT_GE(uploads[0]["fence"].get<std::uint64_t>(), clock);

  const auto report = rows_of(rows, "report");
  ASSERT_EQ(report.size(), 1u) << top->out();
  EXPECT_EQ(report[0]["kind"], "cron");
  EXPECT_EQ(report[0]["holder"]["label"], "true");
  EXPECT_GT(report[0]["ms_left"].get<long long>(), 30 * 60'000);
}

TEST_F(CliTopTest, TheTextTableFitsEightyColumns) {
  const std::string long_name(120, 'n');
  auto holder = cli({"run", long_name, "--", "sh", "-c",
                     "sleep 600; echo a command line far too long for any column of the table"});
  auto other = cli({"run", "-s", "short", "--", "sleep", "600"});
  ASSERT_TRUE(eventually([&] { return exists(run_key(long_name, "w")); }));
  ASSERT_TRUE(eventually([&] { return exists(run_key("short", "r")); }));
  auto top = cli({"top", "--once"});
  ASSERT_EQ(top->wait(), 0) << top->err();
  const auto lines = lines_of(top->out());
  ASSERT_EQ(lines.size(), 4u) << top->out();  // the header, the columns' names, two leases
  for (const std::string& line : lines)
    EXPECT_LE(columns_of(line), 80u) << line;
  EXPECT_NE(lines[0].find("prefix " + prefix_), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("2 leases"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("NAME"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("LEFT"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("nnnnnnnn\xe2\x80\xa6"), std::string::npos)
      << "the name is cut: " << lines[2];
  EXPECT_NE(lines[3].find("short"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("shared"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(std::to_string(other->pid())), std::string::npos) << lines[3];
}

TEST_F(CliTopTest, APatternShowsOnlyTheNamesItMatches) {
  auto alpha = cli({"run", "alpha-1", "--", "sleep", "600"});
  auto beta = cli({"run", "beta-1", "--", "sleep", "600"});
  ASSERT_TRUE(eventually([&] { return exists(run_key("alpha-1", "w")); }));
  ASSERT_TRUE(eventually([&] { return exists(run_key("beta-1", "w")); }));
  auto json = cli({"top", "--json", "alpha*"});
  ASSERT_EQ(json->wait(), 0) << json->err();
  const nlohmann::json rows = nlohmann::json::parse(json->out());
  ASSERT_EQ(rows.size(), 1u) << json->out();
  EXPECT_EQ(rows[0]["name"], "alpha-1");
  auto text = cli({"top", "--once", "beta*"});
  ASSERT_EQ(text->wait(), 0) << text->err();
  EXPECT_NE(text->out().find("beta-1"), std::string::npos) << text->out();
  EXPECT_EQ(text->out().find("alpha-1"), std::string::npos) << text->out();
  auto none = cli({"top", "--json", "gamma*"});
  ASSERT_EQ(none->wait(), 0);
  EXPECT_EQ(none->out(), "[]\n");
}

// 200,000 unrelated keys: SCAN with COUNT 1000 walks them in a few hundred calls (the hash table
// has 2^18 buckets; each call visits about COUNT of them), well under a second on an idle server.
// The bound of 10 s leaves room for a loaded machine and the sanitizer builds; without COUNT
// (10 by default) it would take some 26,000 calls.
TEST_F(CliTopTest, OnceStaysCheapAmongManyUnrelatedKeys) {
  RedisServer big(RedisServer::Options{{"--enable-debug-command", "yes"}, false});
  ASSERT_EQ(big.command({"DEBUG", "POPULATE", "200000", "other"}).str, "OK");
  ASSERT_EQ(big.command({"DBSIZE"}).integer, 200'000);
  auto holder = cli({"run", "needle", "--", "sleep", "600"}, &big);
  ASSERT_TRUE(eventually([&] {
    return big.command({"EXISTS", run_key("needle", "w")}).integer == 1;
  }));
  const long long scans_before = command_calls(big, "scan");
  auto top = cli({"top", "--once"}, &big);
  ASSERT_EQ(top->wait(), 0) << top->err();
  EXPECT_LT(top->took(), 10s);
  EXPECT_NE(top->out().find("needle"), std::string::npos) << top->out();
  const long long scans = command_calls(big, "scan") - scans_before;
  EXPECT_GT(scans, 0);
  EXPECT_LT(scans, 1000) << "SCAN without a large COUNT";
  EXPECT_EQ(command_calls(big, "keys"), 0);
}

TEST_F(CliTopTest, UsageErrorsExit64AndAnUnreachableRedis69) {
  auto interval = cli({"top", "--once", "--interval", "5ms"});
  EXPECT_EQ(interval->wait(), 64);
  auto not_a_duration = cli({"top", "--interval", "soon"});
  EXPECT_EQ(not_a_duration->wait(), 64);
  auto sort = cli({"top", "--once", "--sort", "size"});
  EXPECT_EQ(sort->wait(), 64);
  auto no_terminal = cli({"top"});  // stdin and stdout are files
  EXPECT_EQ(no_terminal->wait(), 64);
  EXPECT_NE(no_terminal->err().find("--once"), std::string::npos) << no_terminal->err();
  Process unreachable(
      {testing::build_paths::cli, "--redis",
       "redis://127.0.0.1:" + std::to_string(testing::free_port()), "top", "--once"},
      server_->dir());
  EXPECT_EQ(unreachable.wait(), 69);
}

TEST_F(CliTopTest, TheManualDocumentsEveryOptionOfTop) {
  const std::string manual =
      read_file(std::string(testing::build_paths::source_dir) + "/docs/cli.md");
  auto help = cli({"top", "--help"});
  ASSERT_EQ(help->wait(), 0);
  EXPECT_NE(manual.find("leasehold top"), std::string::npos);
  for (const char* option : {"--interval", "--sort", "--once", "--json"}) {
    EXPECT_NE(help->out().find(option), std::string::npos) << option;
    EXPECT_NE(manual.find(std::string("`") + option), std::string::npos) << option;
  }
}

// A tmux server of the test's own (its own socket), killed at the end.
class Tmux {
 public:
  explicit Tmux(std::string dir) : dir_(std::move(dir)) {
    static int counter = 0;
    socket_ = "leasehold-top-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  }
  ~Tmux() { run({"kill-server"}); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  // tmux -L <socket> -f /dev/null ARGS...: its exit code.
  int run(std::vector<std::string> args, std::string* out = nullptr) const {
    args.insert(args.begin(), {"tmux", "-L", socket_, "-f", "/dev/null"});
    Process tmux(std::move(args), dir_);
    const int code = tmux.wait(10s);
    if (out)
      *out = tmux.out();
    return code;
  }
  std::string screen(const std::string& session) const {
    std::string out;
    run({"capture-pane", "-p", "-J", "-t", session}, &out);
    return out;
  }
  bool shows(const std::string& session, const std::string& text,
             std::chrono::milliseconds timeout = 10s) const {
    return eventually([&] { return screen(session).find(text) != std::string::npos; }, timeout,
                      50ms);
  }

 private:
  std::string dir_;
  std::string socket_;
};

bool have_tmux() {
  Process probe({"tmux", "-V"}, std::filesystem::temp_directory_path().string());
  return probe.wait() == 0;
}

// A script for a tmux pane: `top` in the foreground (its pid in a file), then how it ended and the
// terminal's modes, which curses must have given back (canonical input, echo).
std::string pane_script(const std::string& dir, const std::string& session,
                        const std::string& top_command) {
  const std::string path = dir + "/" + session + ".sh";
  std::ofstream script(path);
  script << "trap : INT\n"  // the shell outlives a Ctrl-C meant for top, to tell what followed
         << "sh -c 'echo $$ > " << dir << "/" << session << ".pid; exec \"$@\"' sh " << top_command
         << "\n"
         << "echo \"top exited $?\"\n"
         << "stty -a\n"
         << "exec sleep 600\n";
  return path;
}

bool terminal_restored(const std::string& screen) {
  const std::regex canonical("(^|\\s)icanon(\\s|$)");
  const std::regex echo("(^|\\s)echo(\\s|$)");
  return std::regex_search(screen, canonical) && std::regex_search(screen, echo);
}

// Starts `leasehold ARGS...` in an 80x24 tmux pane, in the pane script of `session`.
void start_in_pane(const Tmux& tmux, const std::string& session, const std::string& dir,
                   const std::vector<std::string>& args) {
  std::string command = std::string("'") + testing::build_paths::cli + "'";
  for (const std::string& arg : args)
    command += " '" + arg + "'";
  const std::string script = pane_script(dir, session, command);
  ASSERT_EQ(tmux.run({"new-session", "-d", "-s", session, "-x", "80", "-y", "24", "sh", script}),
            0);
}

pid_t pid_in(const std::string& path) {
  const std::string text = read_file(path);
  return text.empty() ? -1 : std::stoi(text);
}

TEST_F(CliTopTest, TheLiveViewShowsNewLeasesAndQuitsOnQRestoringTheTerminal) {
  if (!have_tmux())
    GTEST_SKIP() << "tmux is not installed";
  auto first = cli({"run", "first-lease", "--", "sleep", "20"});
  ASSERT_TRUE(eventually([&] { return exists(run_key("first-lease", "w")); }));
  const Tmux tmux(server_->dir());
  start_in_pane(tmux, "view", server_->dir(), top_args({"--interval", "200ms"}));
  ASSERT_TRUE(tmux.shows("view", "first-lease")) << tmux.screen("view");
  const std::string screen = tmux.screen("view");
  EXPECT_NE(screen.find("prefix " + prefix_), std::string::npos) << screen;
  EXPECT_NE(screen.find("q: quit"), std::string::npos) << screen;
  for (const std::string& line : lines_of(screen))
    EXPECT_LE(columns_of(line), 80u) << line;

  // Refreshed: a lease taken after the first draw shows, and leaves when released.
  auto second = cli({"run", "-s", "second-lease", "--", "sleep", "20"});
  EXPECT_TRUE(tmux.shows("view", "second-lease")) << tmux.screen("view");
  ::kill(second->pid(), SIGTERM);  // forwarded to sleep; the lease is released
  EXPECT_EQ(second->wait(), 128 + SIGTERM);
  EXPECT_TRUE(eventually(
      [&] { return tmux.screen("view").find("second-lease") == std::string::npos; }, 10s, 50ms))
      << tmux.screen("view");

  const pid_t top = pid_in(server_->dir() + "/view.pid");
  ASSERT_GT(top, 0);
  ASSERT_EQ(tmux.run({"send-keys", "-t", "view", "q"}), 0);
  ASSERT_TRUE(tmux.shows("view", "top exited 0")) << tmux.screen("view");
  EXPECT_TRUE(tmux.shows("view", "icanon")) << tmux.screen("view");
  EXPECT_TRUE(terminal_restored(tmux.screen("view"))) << tmux.screen("view");
  EXPECT_EQ(::kill(top, 0), -1) << "the process is gone";
}

TEST_F(CliTopTest, CtrlCAndSigtermEndTheLiveViewRestoringTheTerminal) {
  if (!have_tmux())
    GTEST_SKIP() << "tmux is not installed";
  auto lease = cli({"run", "held-lease", "--", "sleep", "20"});
  ASSERT_TRUE(eventually([&] { return exists(run_key("held-lease", "w")); }));
  const Tmux tmux(server_->dir());

  start_in_pane(tmux, "interrupted", server_->dir(), top_args({}));
  ASSERT_TRUE(tmux.shows("interrupted", "held-lease")) << tmux.screen("interrupted");
  ASSERT_EQ(tmux.run({"send-keys", "-t", "interrupted", "C-c"}), 0);
  ASSERT_TRUE(tmux.shows("interrupted", "top exited 0")) << tmux.screen("interrupted");
  EXPECT_TRUE(tmux.shows("interrupted", "icanon")) << tmux.screen("interrupted");
  EXPECT_TRUE(terminal_restored(tmux.screen("interrupted"))) << tmux.screen("interrupted");

  start_in_pane(tmux, "terminated", server_->dir(), top_args({}));
  ASSERT_TRUE(tmux.shows("terminated", "held-lease")) << tmux.screen("terminated");
  const std::string pid_file = server_->dir() + "/terminated.pid";
  ASSERT_TRUE(eventually([&] { return pid_in(pid_file) > 0; }));
  ASSERT_EQ(::kill(pid_in(pid_file), SIGTERM), 0);
  ASSERT_TRUE(tmux.shows("terminated", "top exited 0")) << tmux.screen("terminated");
  EXPECT_TRUE(tmux.shows("terminated", "icanon")) << tmux.screen("terminated");
  EXPECT_TRUE(terminal_restored(tmux.screen("terminated"))) << tmux.screen("terminated");
}

}  // namespace
}  // namespace leasehold
