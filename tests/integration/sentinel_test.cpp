// A Client behind Redis Sentinel, against a real master, two replicas and three sentinels: it
// reaches the master the sentinels name, follows a failover, and says clearly what is wrong when
// the master's name is unknown, no sentinel answers, or the sentinels refuse its password.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_sentinel.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::RedisSentinelGroup;
using testing::RedisServer;

class SentinelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { group_ = std::make_unique<RedisSentinelGroup>(); }
  static void TearDownTestSuite() { group_.reset(); }

  static std::unique_ptr<RedisSentinelGroup> group_;
  const Lock<std::string> lock_{"sentinel", 5s};
  const std::string name_ = testing::test_prefix();
};
std::unique_ptr<RedisSentinelGroup> SentinelTest::group_;

// The message of the error `call` throws, or a failure if it throws none.
template <class Call>
std::string error_of(Call call, std::error_code& code) {
  try {
    call();
  } catch (const Error& e) {
    code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST_F(SentinelTest, LeasesAreTakenOnTheMasterTheSentinelsName) {
  RedisServer* master = group_->master();
  ASSERT_NE(master, nullptr);
  Client redis(group_->url());
  auto token = redis.process(lock_.try_lock(name_));
  ASSERT_TRUE(token);
  EXPECT_EQ(master->command({"EXISTS", lock_.key(name_)}).integer, 1);
  EXPECT_TRUE(redis.process(token->release()));
}

TEST_F(SentinelTest, AClientFollowsAFailoverAndTakesLeasesOnTheNewMaster) {
  Client redis(group_->url());
  ASSERT_TRUE(redis.process(Command{"PING"}).str == "PONG");
  RedisServer& promoted = group_->failover(20s);

  // The old connection is closed or demoted: the client finds the new master by itself.
  const auto started = std::chrono::steady_clock::now();
  std::optional<LockToken<Lock<std::string>>> token;
  EXPECT_TRUE(testing::eventually(
      [&] {
        try {
          token = redis.process(lock_.try_lock(name_));
        } catch (const Error&) {
          return false;  // the demoted master refused it, or the connection was being made
        }
        return token.has_value();
      },
      10s, 20ms));
  ASSERT_TRUE(token);
  EXPECT_EQ(promoted.command({"EXISTS", lock_.key(name_)}).integer, 1)
      << "taken on the promoted server";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST_F(SentinelTest, AMasterNameNoSentinelKnowsIsAClearErrorWithinTheConnectTimeout) {
  std::string url = group_->url();
  url.replace(url.rfind('/') + 1, std::string::npos, "nosuch");
  ClientOptions options;
  options.connect_timeout = 1s;
  Client redis(url, options);
  const auto started = std::chrono::steady_clock::now();
  std::error_code code;
  const std::string message = error_of([&] { redis.process(Command{"PING"}); }, code);
  EXPECT_EQ(code, condition::transient);
  EXPECT_NE(message.find("knows no master named 'nosuch'"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
}

TEST_F(SentinelTest, NoSentinelThatAnswersIsAClearErrorNamingThoseTried) {
  const int silent = testing::free_port();
  const int refusing = testing::free_port();
  ClientOptions options;
  options.connect_timeout = 1s;
  Client redis("redis-sentinel://127.0.0.1:" + std::to_string(silent) +
                   ",127.0.0.1:" + std::to_string(refusing) + "/main",
               options);
  std::error_code code;
  const std::string message = error_of([&] { redis.process(Command{"PING"}); }, code);
  EXPECT_EQ(code, condition::transient);
  EXPECT_NE(message.find("no sentinel named a master for 'main'"), std::string::npos) << message;
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(refusing)), std::string::npos) << message;
}

TEST(SentinelPasswordTest, TheSentinelsPasswordIsAQueryParameterAndAWrongOneIsFatal) {
  RedisSentinelGroup group({.replicas = 1, .sentinels = 2, .sentinel_password = "watchword"});
  const Lock<std::string> lock("sentinel", 5s);
  Client redis(group.url() + "?sentinel_password=watchword");
  auto token = redis.process(lock.try_lock(testing::test_prefix()));
  EXPECT_TRUE(token);

  Client wrong(group.url() + "?sentinel_password=guess");
  std::error_code code;
  const std::string message = error_of([&] { wrong.process(Command{"PING"}); }, code);
  EXPECT_EQ(code, condition::fatal);
  EXPECT_NE(message.find("every sentinel refused to log in"), std::string::npos) << message;
  EXPECT_EQ(message.find("guess"), std::string::npos) << "the password never shows: " << message;

  Client none(group.url());
  const std::string unauthenticated = error_of([&] { none.process(Command{"PING"}); }, code);
  EXPECT_NE(unauthenticated.find("add ?sentinel_password="), std::string::npos) << unauthenticated;
}

}  // namespace
}  // namespace leasehold
