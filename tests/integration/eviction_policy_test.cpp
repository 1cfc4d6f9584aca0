// The warning at connect when the server's maxmemory-policy may evict lock keys.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "leasehold/client.hpp"
#include "leasehold/log.hpp"
#include "redis_server.hpp"

namespace leasehold {
namespace {

using testing::RedisServer;

// Collects the warnings logged while it lives.
class CapturedWarnings {
 public:
  CapturedWarnings() {
    set_log_handler([this](LogLevel level, std::string_view message) {
      if (level != LogLevel::warning)
        return;
      std::lock_guard lock(mutex_);
      warnings_.emplace_back(message);
    });
  }
  ~CapturedWarnings() { set_log_handler({}); }

  std::vector<std::string> get() const {
    std::lock_guard lock(mutex_);
    return warnings_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> warnings_;
};

// The check's reply comes before the PING's on the one connection, and its warning is logged as
// it is read: once PING returns, the warning is there or never comes.
void connect_and_ping(Client& client) {
  client.connect();
  EXPECT_EQ(client.process(Command{"PING"}), Reply::make_status("PONG"));
}

TEST(EvictionPolicy, APolicyThatMayEvictLockKeysIsWarnedAboutOnce) {
  RedisServer server(
      RedisServer::Options{{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}});
  CapturedWarnings warnings;
  Client client(server.tcp_url());
  connect_and_ping(client);
  ASSERT_EQ(warnings.get().size(), 1u);
  const std::string warning = warnings.get().front();
  EXPECT_NE(warning.find("volatile-lru"), std::string::npos) << warning;
  EXPECT_NE(warning.find("maxmemory 104857600"), std::string::npos) << warning;
  EXPECT_NE(warning.find("noeviction"), std::string::npos) << warning;
  EXPECT_NE(warning.find(std::to_string(server.port())), std::string::npos) << warning;

  // Once per client: a reconnect does not repeat it.
  server.command({"CLIENT", "KILL", "TYPE", "normal"});
  EXPECT_TRUE(testing::eventually([&] {
    std::error_code ec;
    client.process(Command{"PING"}, ec);
    return !ec;
  }));
  EXPECT_EQ(warnings.get().size(), 1u);
}

TEST(EvictionPolicy, AnEvictingPolicyWithoutMaxmemoryIsWarnedAboutToo) {
  RedisServer server(RedisServer::Options{{"--maxmemory-policy", "allkeys-lru"}});
  CapturedWarnings warnings;
  Client client(server.tcp_url());
  connect_and_ping(client);
  ASSERT_EQ(warnings.get().size(), 1u);
  EXPECT_NE(warnings.get().front().find("allkeys-lru (no maxmemory set yet)"), std::string::npos)
      << warnings.get().front();
}

TEST(EvictionPolicy, NoevictionIsNotWarnedAbout) {
  RedisServer server(RedisServer::Options{{"--maxmemory-policy", "noeviction"}});
  CapturedWarnings warnings;
  Client client(server.tcp_url());
  connect_and_ping(client);
  EXPECT_EQ(testing::command_calls(server, "info"), 1) << "the check ran";
  EXPECT_TRUE(warnings.get().empty());
}

TEST(EvictionPolicy, AServerThatRefusesInfoIsNoReasonToWarn) {
  RedisServer server(RedisServer::Options{{"--maxmemory-policy", "allkeys-lru"}});
  server.command({"ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-info"});
  CapturedWarnings warnings;
  Client client("redis://app:pw@127.0.0.1:" + std::to_string(server.port()));
  connect_and_ping(client);
  EXPECT_TRUE(warnings.get().empty());
}

TEST(EvictionPolicy, TheCheckCanBeTurnedOff) {
  RedisServer server(RedisServer::Options{{"--maxmemory-policy", "allkeys-lru"}});
  CapturedWarnings warnings;
  ClientOptions options;
  options.warn_on_eviction_policy = false;
  Client client(server.tcp_url(), options);
  connect_and_ping(client);
  EXPECT_EQ(testing::command_calls(server, "info"), 0);
  EXPECT_TRUE(warnings.get().empty());
}

}  // namespace
}  // namespace leasehold
