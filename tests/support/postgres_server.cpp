#include "postgres_server.hpp"

#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "redis_server.hpp"  // free_port()

extern char** environ;

namespace leasehold::testing {
namespace {

// The newest installed server's programs: Debian puts them in /usr/lib/postgresql/<major>/bin.
std::string server_bin_dir() {
  std::string found;
  int newest = -1;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ignored)) {
    const std::string major = entry.path().filename().string();
    if (std::filesystem::exists(entry.path() / "bin" / "initdb") &&
        std::atoi(major.c_str()) > newest) {
      newest = std::atoi(major.c_str());
      found = (entry.path() / "bin").string();
    }
  }
  if (found.empty())
    throw std::runtime_error(
        "no PostgreSQL server programs in /usr/lib/postgresql/*/bin (scripts/setup installs "
        "Debian's postgresql-15)");
  return found;
}

std::unique_ptr<PGconn, void (*)(PGconn*)> connect(const std::string& conninfo) {
  std::unique_ptr<PGconn, void (*)(PGconn*)> connection(PQconnectdb(conninfo.c_str()), PQfinish);
  if (PQstatus(connection.get()) != CONNECTION_OK)
    throw std::runtime_error("cannot connect to the test's PostgreSQL: " +
                             std::string(PQerrorMessage(connection.get())));
  return connection;
}

}  // namespace

PostgresServer::PostgresServer() : bin_dir_(server_bin_dir()), port_(free_port()) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "leasehold-postgres-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  if (::geteuid() == 0) {
    const passwd* owner = ::getpwnam("postgres");
    if (owner == nullptr || ::chown(dir_.c_str(), owner->pw_uid, owner->pw_gid) != 0)
      throw std::runtime_error("the tests run as root, and " + dir_ +
                               " cannot be given to the user postgres (is the server installed?)");
  }
  run_as_owner({bin_dir_ + "/initdb", "-D", dir_ + "/data", "-U", "leasehold", "-A", "trust",
                "--no-sync", "-E", "UTF8", "--locale=C"},
               true);
  run_as_owner({bin_dir_ + "/postgres", "-D", dir_ + "/data", "-k", dir_, "-p",
                std::to_string(port_), "-c", "listen_addresses=", "-c", "fsync=off", "-c",
                "full_page_writes=off", "-c", "synchronous_commit=off"},
               false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (PQping(conninfo().c_str()) != PQPING_OK) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("postgres exited at start; see " + dir_ + "/postgres.log");
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("postgres did not start within 30 s; see " + dir_ + "/postgres.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling against a deadline
  }
}

PostgresServer::~PostgresServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGINT);  // a fast shutdown: clients are disconnected, nothing is kept
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling against a deadline
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string PostgresServer::conninfo() const {
  return "host=" + dir_ + " port=" + std::to_string(port_) + " dbname=postgres user=leasehold";
}

std::string PostgresServer::query(const std::string& sql) const {
  const auto connection = connect(conninfo());
  std::unique_ptr<PGresult, void (*)(PGresult*)> result(PQexec(connection.get(), sql.c_str()),
                                                        PQclear);
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
    throw std::runtime_error("PostgreSQL refused " + sql + ": " +
                             PQresultErrorMessage(result.get()));
  return PQntuples(result.get()) > 0 ? PQgetvalue(result.get(), 0, 0) : "";
}

void PostgresServer::run_as_owner(const std::vector<std::string>& args, bool wait) {
  std::vector<std::string> command;
  if (::geteuid() == 0)
    // setpriv executes the program itself (runuser would stay its parent): pid_ is the server's.
    command = {"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"};
  command.insert(command.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : command)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string log = dir_ + "/postgres.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0666);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw std::runtime_error("cannot run " + command.front());
  if (!wait) {
    pid_ = pid;
    return;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(args.front() + " failed; see " + log);
}

}  // namespace leasehold::testing
