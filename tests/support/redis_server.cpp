#include "redis_server.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace leasehold::testing {
namespace {

std::string make_temp_dir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "leasehold-redis-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  return pattern;
}

Reply to_reply(const redisReply* reply) {
  switch (reply->type) {
    case REDIS_REPLY_STRING:
      return Reply::make_string(std::string(reply->str, reply->len));
    case REDIS_REPLY_STATUS:
      return Reply::make_status(std::string(reply->str, reply->len));
    case REDIS_REPLY_ERROR:
      return Reply::make_error(std::string(reply->str, reply->len));
    case REDIS_REPLY_INTEGER:
      return Reply::make_integer(reply->integer);
    case REDIS_REPLY_ARRAY: {
      std::vector<Reply> elements;
      for (size_t i = 0; i < reply->elements; ++i)
        elements.push_back(to_reply(reply->element[i]));
      return Reply::make_array(std::move(elements));
    }
    default:
      return Reply::make_nil();
  }
}

// The directory of the C library this process runs with (e.g. /lib/x86_64-linux-gnu).
std::filesystem::path libc_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&::free), &info) == 0 || info.dli_fname == nullptr)
    return "/lib";
  return std::filesystem::path(info.dli_fname).parent_path();
}

// The libraries to preload into a fake_clock server, first to last.
std::string fake_clock_preload() {
  const std::filesystem::path lib = libc_directory();
  const char* override_path = std::getenv("LEASEHOLD_LIBFAKETIME");
  std::filesystem::path faketime = override_path ? override_path : "";
  if (faketime.empty()) {
    for (const auto& candidate :
         {lib / "faketime/libfaketime.so.1",
          std::filesystem::path("/usr/lib/faketime/libfaketime.so.1"),
          std::filesystem::path("/usr/local/lib/faketime/libfaketime.so.1")}) {
      if (std::filesystem::exists(candidate)) {
        faketime = candidate;
        break;
      }
    }
  }
  if (faketime.empty() || !std::filesystem::exists(faketime))
    throw std::runtime_error(
        "libfaketime.so.1 not found: install Debian's faketime package (scripts/setup), or set "
        "LEASEHOLD_LIBFAKETIME to its path");
  // Debian's redis-server allocates with jemalloc, whose first allocation reads the clock, and
  // libfaketime answers its first clock call with an allocation: the two recurse and the server
  // hangs at start. glibc's libc_malloc_debug.so, preloaded first, gives malloc and free back to
  // glibc's allocator.
  const std::filesystem::path glibc_malloc = lib / "libc_malloc_debug.so.0";
  std::string preload = faketime.string();
  if (std::filesystem::exists(glibc_malloc))
    preload = glibc_malloc.string() + ":" + preload;
  return preload;
}

std::string offset_text(std::chrono::milliseconds offset) {
  // libfaketime's relative offset: a sign, then seconds.
  char text[32];
  std::snprintf(text, sizeof text, "%+.3f", static_cast<double>(offset.count()) / 1000.0);
  return text;
}

}  // namespace

int free_port() {
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(fd);
      throw std::runtime_error("cannot find a free port");
    }
    ::close(fd);
    const int port = ntohs(address.sin_port);
    if (port != 6379)
      return port;
  }
}

std::string test_prefix() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "test";
  return "lh-test:" + name + ":" + std::to_string(::getpid()) + ":" + std::to_string(++counter);
}

RedisServer::RedisServer() : RedisServer(Options{}) {}

RedisServer::RedisServer(Options options) : RedisServer(std::move(options), {}) {}

RedisServer::RedisServer(Options options, std::vector<std::string> sentinel_config)
    : options_(std::move(options)), sentinel_config_(std::move(sentinel_config)) {
  dir_ = make_temp_dir();
  socket_path_ = dir_ + "/redis.sock";
  for (const auto& arg : options_.extra_args)
    if (&arg != &options_.extra_args.back() && arg == "--requirepass")
      admin_password = *(&arg + 1);
  // A cluster node also listens on port + 10000 (its bus): keep that in range.
  const bool cluster = std::find(options_.extra_args.begin(), options_.extra_args.end(),
                                 "--cluster-enabled") != options_.extra_args.end();
  // free_port()'s port (or a cluster node's bus port) can be taken by another process before the
  // server binds it: a server that exits at start for that gets another port, a few times.
  for (int attempt = 1;; ++attempt) {
    do {
      port_ = free_port();
    } while (cluster && port_ > 55000);
    try {
      launch();
      return;
    } catch (const std::runtime_error&) {
      if (attempt == 5 || !log_says_address_in_use())
        throw;
      std::error_code ignored;
      std::filesystem::remove(dir_ + "/redis.log", ignored);
      std::filesystem::remove(dir_ + "/nodes.conf", ignored);
    }
  }
}

bool RedisServer::log_says_address_in_use() const {
  std::ifstream log(dir_ + "/redis.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  return text.find("Address already in use") != std::string::npos;
}

RedisServer::~RedisServer() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

namespace {

// "?<LEASEHOLD_TEST_URL_QUERY>" when the variable is set: the suites that CTest runs once more
// with it ("compat=redis6") then reach every server the way that query says.
std::string test_url_query() {
  const char* query = std::getenv("LEASEHOLD_TEST_URL_QUERY");
  return query != nullptr && *query != '\0' ? "?" + std::string(query) : std::string();
}

}  // namespace

std::string RedisServer::tcp_url() const {
  return "redis://" + options_.bind + ":" + std::to_string(port_) + test_url_query();
}
std::string RedisServer::unix_url() const {
  return "unix://" + socket_path_ + test_url_query();
}

void RedisServer::launch() {
  const char* binary = std::getenv("LEASEHOLD_REDIS_SERVER");
  std::vector<std::string> args = options_.launcher;
  args.push_back(binary ? binary : "redis-server");
  if (!sentinel_config_.empty()) {
    // Written once: a restarted sentinel keeps what it learned.
    const std::string config = dir_ + "/sentinel.conf";
    if (!std::filesystem::exists(config)) {
      std::ofstream out(config);
      for (const std::string& line : sentinel_config_)
        out << line << "\n";
    }
    args.push_back(config);
    args.push_back("--sentinel");
  }
  args.insert(args.end(),
              {"--port", std::to_string(port_), "--bind", options_.bind, "--unixsocket",
               socket_path_, "--unixsocketperm", "700", "--dir", dir_, "--save", "", "--appendonly",
               "no", "--daemonize", "no", "--logfile", dir_ + "/redis.log"});
  // A server without a password refuses other addresses than loopback's in protected mode: on a
  // NetworkLab host its clients come from the other hosts.
  if (options_.bind != "127.0.0.1")
    args.insert(args.end(), {"--protected-mode", "no"});
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  // A fake_clock server reads its offset from a file on every clock call (FAKETIME_NO_CACHE), so
  // that set_clock_offset() takes effect at once; a restart keeps the offset.
  std::vector<std::string> environment;
  if (options_.fake_clock) {
    if (!std::filesystem::exists(clock_file()))
      set_clock_offset(std::chrono::milliseconds(0));
    std::string preload = fake_clock_preload();
    for (char** variable = environ; *variable != nullptr; ++variable) {
      const std::string_view entry(*variable);
      if (entry.starts_with("LD_PRELOAD="))
        preload += ":" + std::string(entry.substr(11));
      else if (!entry.starts_with("FAKETIME"))
        environment.emplace_back(entry);
    }
    environment.push_back("LD_PRELOAD=" + preload);
    environment.push_back("FAKETIME_TIMESTAMP_FILE=" + clock_file());
    environment.push_back("FAKETIME_NO_CACHE=1");
    environment.push_back("FAKETIME_DONT_FAKE_MONOTONIC=1");  // timers and timeouts stay real
    environment.push_back("FAKETIME_DISABLE_SHM=1");          // nothing left in /dev/shm
  }
  std::vector<char*> envp;
  for (auto& variable : environment)
    envp.push_back(variable.data());
  envp.push_back(nullptr);
  // The server logs to its file, and its standard streams go to another in its directory (a
  // configuration it refuses is reported there): a server left behind by a test process that
  // crashed must not hold that process's output pipe open, or whatever reads the pipe (ctest, a
  // shell) waits for it until its own timeout.
  const std::string output = dir_ + "/redis.stdout";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int spawned = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(),
                                   options_.fake_clock ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw std::runtime_error("cannot start redis-server (is it installed?)");
  paused_ = false;
  wait_ready(std::chrono::seconds(10));
}

void RedisServer::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start; see " + dir_ + "/redis.log and " +
                               dir_ + "/redis.stdout");
    }
    redisContext* context = redisConnectUnix(socket_path_.c_str());
    if (context != nullptr && context->err == 0) {
      redisFree(context);
      return;
    }
    if (context)
      redisFree(context);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling against a deadline
  }
  throw std::runtime_error("redis-server did not start within the timeout");
}

void RedisServer::stop() {
  if (pid_ <= 0)
    return;
  if (paused_)
    resume();
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
}

void RedisServer::kill() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  paused_ = false;
}

void RedisServer::start() {
  if (pid_ > 0)
    return;
  ::unlink(socket_path_.c_str());
  launch();
}

void RedisServer::pause() {
  ::kill(pid_, SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

void RedisServer::set_clock_offset(std::chrono::milliseconds offset) {
  if (!options_.fake_clock)
    throw std::logic_error("set_clock_offset() needs a server started with fake_clock");
  // Written aside and renamed into place: the server never reads a half-written file.
  const std::string next = clock_file() + ".next";
  {
    std::ofstream out(next, std::ios::trunc);
    out << offset_text(offset) << "\n";
    if (!out.flush())
      throw std::runtime_error("cannot write " + next);
  }
  std::filesystem::rename(next, clock_file());
}

Reply RedisServer::command(const std::vector<std::string>& args) const {
  redisContext* context = redisConnectUnix(socket_path_.c_str());
  if (context == nullptr || context->err != 0) {
    if (context)
      redisFree(context);
    throw std::runtime_error("admin connection to the test redis-server failed");
  }
  if (!admin_password.empty()) {
    auto* auth = static_cast<redisReply*>(redisCommand(context, "AUTH %s", admin_password.c_str()));
    if (auth)
      freeReplyObject(auth);
  }
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const auto& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(args.size()), argv.data(), lengths.data()));
  if (reply == nullptr) {
    redisFree(context);
    throw std::runtime_error("admin command failed");
  }
  Reply result = to_reply(reply);
  freeReplyObject(reply);
  redisFree(context);
  return result;
}

}  // namespace leasehold::testing
