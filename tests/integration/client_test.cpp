#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <thread>

#include "leasehold/client.hpp"
#include "redis_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new RedisServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static RedisServer* server_;
  std::string prefix_ = testing::test_prefix();
};
RedisServer* ClientTest::server_ = nullptr;

TEST_F(ClientTest, PingOverTcpAndUnixSocket) {
  for (const auto& url : {server_->tcp_url(), server_->unix_url()}) {
    Client client(url);
    client.connect();
    const Reply reply = client.process(Command{"PING"});
    EXPECT_EQ(reply, Reply::make_status("PONG")) << url;
  }
}

TEST_F(ClientTest, SetThenGetReturnsTheValue) {
  Client client(server_->unix_url());
  EXPECT_EQ(client.process(Command{"SET", prefix_ + ":k", std::string("a\0b", 3)}),
            Reply::make_status("OK"));
  EXPECT_EQ(client.process(Command{"GET", prefix_ + ":k"}),
            Reply::make_string(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace leasehold
