// Async calls and their Diagnostics against a real, private redis-server: a failed call leaves in
// its diagnostics the detail that the sync API's Error carries in what().
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <future>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "leasehold/capability.hpp"
#include "leasehold/client.hpp"
#include "leasehold/lock.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

class DiagnosticsTest : public testing::SharedServerTest {
 protected:
  // A key that holds a list: a string command on it is refused with WRONGTYPE.
  std::string list_key() {
    const std::string key = prefix_ + ":list";
    server_->command({"RPUSH", key, "x"});
    return key;
  }

  std::string prefix_ = testing::test_prefix();
};

// Runs `start(handler)` and waits for the handler's error code.
template <class Start>
std::error_code completion_of(Start start) {
  std::promise<std::error_code> done;
  start([&done](std::error_code ec, auto&&...) { done.set_value(ec); });
  auto future = done.get_future();
  if (future.wait_for(10s) != std::future_status::ready)
    return make_error_code(std::errc::timed_out);
  return future.get();
}

TEST_F(DiagnosticsTest, AnAsyncCallOnAKeyOfTheWrongTypeGetsTheServersMessage) {
  Client client(server_->unix_url());
  const std::string key = list_key();
  Diagnostics diagnostics;
  const std::error_code ec = completion_of([&](auto handler) {
    client.async_process(Command{"GET", key}, diagnostics, std::move(handler));
  });
  EXPECT_EQ(ec, errc::wrong_type);
  EXPECT_EQ(diagnostics.message().rfind("WRONGTYPE", 0), 0u) << diagnostics.message();
  // What the sync call throws says the same.
  try {
    client.process(Command{"GET", key});
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(diagnostics.message()), std::string::npos) << e.what();
  }
}

TEST_F(DiagnosticsTest, ACallOnAClosedClientSaysTheClientWasClosed) {
  Client client(server_->unix_url());
  client.close();
  Diagnostics diagnostics;
  const std::error_code ec = completion_of([&](auto handler) {
    client.async_process(Command{"PING"}, diagnostics, std::move(handler));
  });
  EXPECT_EQ(ec, errc::closed);
  EXPECT_EQ(diagnostics.message(), "the client was closed");
  // A batch that fails as a whole says it too.
  const std::vector<Command> batch{Command{"PING"}, Command{"PING"}};
  Diagnostics batch_diagnostics;
  const std::error_code batch_ec = completion_of([&](auto handler) {
    client.async_process(std::span<const Command>(batch), batch_diagnostics, std::move(handler));
  });
  EXPECT_EQ(batch_ec, errc::closed);
  EXPECT_EQ(batch_diagnostics.message(), "the client was closed");
}

TEST_F(DiagnosticsTest, ACallClearsItsDiagnosticsWhenItStartsAndASuccessLeavesThemEmpty) {
  Client client(server_->unix_url());
  const std::string key = list_key();
  Diagnostics diagnostics;
  ASSERT_EQ(completion_of([&](auto handler) {
              client.async_process(Command{"GET", key}, diagnostics, std::move(handler));
            }),
            errc::wrong_type);
  ASSERT_FALSE(diagnostics.message().empty());
  EXPECT_EQ(completion_of([&](auto handler) {
              client.async_process(Command{"LLEN", key}, diagnostics, std::move(handler));
            }),
            std::error_code{});
  EXPECT_EQ(diagnostics.message(), "");
}

// A lock query through a narrowed handle, awaited with a token that throws: the diagnostics are
// filled before the exception reaches the coroutine.
TEST_F(DiagnosticsTest, AnAwaitedLockQueryThatThrowsLeavesTheServersMessage) {
  asio::io_context io;
  Client client(io.get_executor(), server_->unix_url());
  const Lock<std::string> locks{"diagnostics", 10s};
  server_->command({"RPUSH", locks.key(prefix_), "x"});
  auto handle = narrow<ReadWrite>(client);
  Diagnostics diagnostics;
  std::error_code thrown;
  std::error_code returned;
  Diagnostics returned_diagnostics;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const auto acquire = locks.try_lock(prefix_);
        try {
          co_await handle.async_process(acquire, diagnostics, asio::use_awaitable);
        } catch (const std::system_error& e) {
          thrown = e.code();
        }
        const auto again = locks.try_lock(prefix_);
        const auto token = co_await client.async_process(
            again, returned_diagnostics, asio::redirect_error(asio::use_awaitable, returned));
        EXPECT_FALSE(token.has_value());
        client.close();  // lets io.run() return
      },
      testing::rethrow_failure);
  io.run_for(10s);
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(thrown, errc::wrong_type);
  EXPECT_EQ(diagnostics.message().rfind("WRONGTYPE", 0), 0u) << diagnostics.message();
  EXPECT_EQ(returned, errc::wrong_type);
  EXPECT_EQ(returned_diagnostics.message().rfind("WRONGTYPE", 0), 0u)
      << returned_diagnostics.message();
}

TEST_F(DiagnosticsTest, AnUnreachableServerIsNamedInTheDiagnostics) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::free_port());
  ClientOptions options;
  options.connect_timeout = 300ms;
  options.command_timeout = 300ms;
  Client client("redis://" + address, options);
  Diagnostics diagnostics;
  const std::error_code ec = completion_of([&](auto handler) {
    client.async_process(Command{"PING"}, diagnostics, std::move(handler));
  });
  EXPECT_TRUE(ec == condition::transient) << ec.message();
  EXPECT_NE(diagnostics.message().find(address), std::string::npos) << diagnostics.message();
}

}  // namespace
}  // namespace leasehold
