// The connection against a real, private redis-server.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <future>
#include <sstream>
#include <thread>

#include "client_list.hpp"
#include "eventually.hpp"
#include "leasehold/client.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

// A script query, as lock queries will be: EVALSHA with the EVAL fallback.
const Script kEchoScript("return ARGV[1]");

struct EchoScript {
  using result_type = std::string;
  std::string value;
  Request request() const {
    const std::string_view args[] = {value};
    return Request::script(kEchoScript, {}, args);
  }
  Result<std::string> parse(Reply reply, const Timing&) const {
    if (reply.is_error())
      return error_result<std::string>(reply);
    return std::move(reply.str);
  }
};

class ClientTest : public testing::SharedServerTest {
 protected:
  std::string prefix_ = testing::test_prefix();
};

TEST_F(ClientTest, PingsOverTcpAndOverAUnixSocket) {
  for (const auto& url : {server_->tcp_url(), server_->unix_url()}) {
    Client client(url);
    client.connect();
    EXPECT_EQ(client.process(Command{"PING"}), Reply::make_status("PONG")) << url;
  }
}

TEST_F(ClientTest, BinaryValuesRoundTrip) {
  Client client(server_->unix_url());
  const std::string value("a\0b\r\n\xff", 6);
  EXPECT_EQ(client.process(Command{"SET", prefix_ + ":k", value}), Reply::make_status("OK"));
  EXPECT_EQ(client.process(Command{"GET", prefix_ + ":k"}), Reply::make_string(value));
  EXPECT_EQ(server_->command({"GET", prefix_ + ":k"}).str, value);
}

TEST_F(ClientTest, EightThreadsShareOneConnectionAndEachGetsItsOwnReply) {
  ClientOptions options;
  options.client_name = "lh-threads";
  options.command_timeout = 30s;
  Client client(server_->unix_url(), options);
  constexpr int kThreads = 8;
  constexpr int kCommands = 10000;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCommands; ++i) {
        const std::string payload = std::to_string(t) + ":" + std::to_string(i);
        if (client.process(Command{"ECHO", payload}) != Reply::make_string(payload))
          ++mismatches;
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  // All of it went through one connection.
  const std::string list = server_->command({"CLIENT", "LIST"}).str;
  std::size_t named = 0;
  for (auto at = list.find("name=lh-threads "); at != std::string::npos;
       at = list.find("name=lh-threads ", at + 1))
    ++named;
  EXPECT_EQ(named, 1u);
}

TEST_F(ClientTest, AThousandCoroutinesShareOneConnection) {
  asio::io_context io;
  ClientOptions options;
  options.command_timeout = 30s;
  Client client(io.get_executor(), server_->unix_url(), options);
  constexpr int kCoroutines = 1000;
  constexpr int kCommands = 20;
  int mismatches = 0;
  int finished = 0;
  for (int c = 0; c < kCoroutines; ++c) {
    asio::co_spawn(
        io,
        [&, c]() -> asio::awaitable<void> {
          for (int i = 0; i < kCommands; ++i) {
            const std::string payload = std::to_string(c) + "/" + std::to_string(i);
            // A named query: g++ 12 rejects an initializer-list temporary inside co_await.
            const Command echo{"ECHO", payload};
            Reply reply = co_await client.async_process(echo, asio::use_awaitable);
            if (reply != Reply::make_string(payload))
              ++mismatches;
          }
          if (++finished == kCoroutines)
            client.close();  // lets io.run() return
        },
        testing::rethrow_failure);
  }
  io.run_for(60s);
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(finished, kCoroutines);
  EXPECT_EQ(mismatches, 0);
}

// A query as a user writes one: an aggregate of std::strings (longer than the small-string buffer,
// so that they live on the heap).
struct SetIfAbsent {
  using result_type = bool;
  std::string key;
  std::string value;
  Request request() const { return Request::command({"SET", key, value, "NX"}); }
  Result<bool> parse(Reply reply, const Timing&) const {
    if (reply.is_error())
      return error_result<bool>(reply);
    return reply.type == Reply::Type::status;  // OK, or nil when the key was there
  }
};

// The form docs/connection.md recommends for such a query in a coroutine: a named query, never a
// brace-initialised temporary inside the co_await (g++ 12 destroys that temporary's members twice).
// The sanitizer builds would see a double destruction here.
TEST_F(ClientTest, ACoroutineAwaitsAUserWrittenAggregateQueryByName) {
  asio::io_context io;
  Client client(io.get_executor(), server_->unix_url());
  const std::string key = prefix_ + ":a key long enough to live on the heap";
  const std::string value = "a value long enough to live on the heap, too";
  bool first = false;
  bool second = true;
  bool intact = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const SetIfAbsent set{key, value};
        first = co_await client.async_process(set, asio::use_awaitable);
        intact = set.key == key && set.value == value;
        SetIfAbsent again{key, "another value, long enough to live on the heap"};
        second = co_await client.async_process(std::move(again), asio::use_awaitable);
        client.close();
      },
      testing::rethrow_failure);
  io.run_for(5s);
  EXPECT_TRUE(io.stopped());
  EXPECT_TRUE(first) << "the key was set";
  EXPECT_FALSE(second) << "the key was there already";
  EXPECT_TRUE(intact) << "the named query is whole after the co_await";
  EXPECT_EQ(server_->command({"GET", key}).str, value);
}

TEST_F(ClientTest, AsyncCallsCompleteWithPlainCallbacks) {
  Client client(server_->unix_url());
  std::promise<std::pair<std::error_code, Reply>> done;
  client.async_process(Command{"INCR", prefix_ + ":n"}, [&](std::error_code ec, Reply reply) {
    done.set_value({ec, std::move(reply)});
  });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  auto [ec, reply] = future.get();
  EXPECT_FALSE(ec);
  EXPECT_EQ(reply, Reply::make_integer(1));
}

TEST_F(ClientTest, ABatchRunsInOneRoundTripAndEachQueryHasItsOwnOutcome) {
  Client client(server_->unix_url());
  server_->command({"SET", prefix_ + ":text", "not a number"});
  std::vector<Command> batch;
  for (int i = 0; i < 100; ++i)
    batch.push_back(Command{"INCR", prefix_ + ":counter"});
  batch.push_back(Command{"INCR", prefix_ + ":text"});
  const auto results = client.process(batch);
  ASSERT_EQ(results.size(), 101u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(results[i].error(), std::error_code{}) << i;
  EXPECT_EQ(results[99].value(), Reply::make_integer(100));
  EXPECT_EQ(results[100].error(), errc::server_error);
  EXPECT_NE(results[100].detail().find("not an integer"), std::string::npos);
}

TEST_F(ClientTest, AnErrorReplyThrowsWithTheServersMessage) {
  Client client(server_->unix_url());
  server_->command({"RPUSH", prefix_ + ":list", "x"});
  try {
    client.process(Command{"GET", prefix_ + ":list"});
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::wrong_type);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos);
  }
  std::error_code ec;
  client.process(Command{"GET", prefix_ + ":list"}, ec);
  EXPECT_EQ(ec, errc::wrong_type);
}

TEST_F(ClientTest, NoscriptAfterScriptFlushIsInvisibleToTheCaller) {
  Client client(server_->unix_url());
  EXPECT_EQ(client.process(EchoScript{"one"}), "one");
  ASSERT_EQ(server_->command({"SCRIPT", "FLUSH"}), Reply::make_status("OK"));
  const long long evals_before = command_calls(*server_, "eval");
  EXPECT_EQ(client.process(EchoScript{"two"}), "two");
  EXPECT_EQ(command_calls(*server_, "eval"), evals_before + 1);  // the fallback did run
  EXPECT_EQ(client.process(EchoScript{"three"}), "three");       // and cached it again
  EXPECT_EQ(command_calls(*server_, "eval"), evals_before + 1);
}

TEST_F(ClientTest, NoscriptInsideABatchFallsBackForEachScriptCall) {
  Client client(server_->unix_url());
  ASSERT_EQ(server_->command({"SCRIPT", "FLUSH"}), Reply::make_status("OK"));
  const std::vector<EchoScript> batch = {{"a"}, {"b"}, {"c"}};
  const auto results = client.process(batch);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].value(), "a");
  EXPECT_EQ(results[1].value(), "b");
  EXPECT_EQ(results[2].value(), "c");
}

TEST_F(ClientTest, SelectsTheDatabaseOfTheUrl) {
  Client client(server_->unix_url() + "?db=3");
  client.process(Command{"SET", prefix_ + ":db", "3"});
  EXPECT_EQ(server_->command({"EXISTS", prefix_ + ":db"}), Reply::make_integer(0));
  EXPECT_EQ(
      server_->command({"EVAL", "redis.call('SELECT', 3) return redis.call('EXISTS', KEYS[1])", "1",
                        prefix_ + ":db"}),
      Reply::make_integer(1));
}

TEST_F(ClientTest, ADatabaseTheServerRefusesIsFatal) {
  Client client(server_->unix_url() + "?db=999");
  try {
    client.connect();
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::select_failed);
    EXPECT_NE(std::string(e.what()).find("SELECT 999"), std::string::npos) << e.what();
  }
  std::error_code ec;
  client.process(Command{"PING"}, ec);
  EXPECT_EQ(ec, errc::select_failed);
}

TEST_F(ClientTest, SetsTheClientName) {
  ClientOptions options;
  options.client_name = "lh-named-client";
  Client client(server_->unix_url(), options);
  client.connect();
  EXPECT_FALSE(client_id(*server_, "lh-named-client").empty());
}

TEST_F(ClientTest, ConnectionRefusedNamesTheAddress) {
  const int port = testing::free_port();
  ClientOptions options;
  options.connect_timeout = 1s;
  Client client("redis://127.0.0.1:" + std::to_string(port), options);
  try {
    client.connect();
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  }
}

TEST_F(ClientTest, AMalformedUrlIsRefusedAtConstruction) {
  try {
    Client client("redis://user:hunter2@host:notaport");
    FAIL() << "constructed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_url);
    const std::string what = e.what();
    EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
    EXPECT_NE(what.find("port"), std::string::npos) << what;
  }
}

TEST_F(ClientTest, ABlockingCallFromTheIoThreadIsAnErrorNotADeadlock) {
  asio::io_context io;
  Client client(io.get_executor(), server_->unix_url());
  std::error_code seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        client.process(Command{"PING"}, seen);
        client.close();
        co_return;
      },
      testing::rethrow_failure);
  io.run_for(5s);
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(seen, errc::called_from_io_thread);
}

TEST_F(ClientTest, AStrandOfAnIoContextServesAsTheExecutorAndItsThreadIsTheIoThread) {
  asio::io_context io;
  Client client(asio::make_strand(io), server_->unix_url());
  const Command ping{"PING"};  // (g++ 12 cannot initialise a Command inside the coroutine)
  std::error_code blocking;
  Reply pong;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        pong = co_await client.async_process(ping, asio::use_awaitable);
        client.process(ping, blocking);
        client.close();
      },
      testing::rethrow_failure);
  io.run_for(5s);
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(pong.str, "PONG");
  EXPECT_EQ(blocking, errc::called_from_io_thread);
}

// A coroutine's any_io_executor may hold something else than an io_context's executor: the call
// must complete on that executor (here a strand), not on one it was mistaken for.
TEST_F(ClientTest, ACoroutineOnAStrandResumesOnItsStrand) {
  asio::io_context io;
  Client client(io.get_executor(), server_->unix_url());
  const auto strand = asio::make_strand(io);
  const Command ping{"PING"};
  int resumed_on_strand = 0;
  asio::co_spawn(
      strand,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
          const Reply pong = co_await client.async_process(ping, asio::use_awaitable);
          if (pong.str == "PONG" && strand.running_in_this_thread())
            ++resumed_on_strand;
        }
        client.close();
      },
      testing::rethrow_failure);
  std::thread second([&io] { io.run_for(5s); });
  io.run_for(5s);
  second.join();
  EXPECT_EQ(resumed_on_strand, 3);
}

TEST_F(ClientTest, AnExecutorOfNoIoContextIsRefusedAtConstruction) {
  asio::thread_pool pool(1);
  try {
    Client client(pool.get_executor(), server_->unix_url());
    FAIL() << "constructed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("io_context"), std::string::npos) << e.what();
  }
  pool.join();
}

TEST_F(ClientTest, AClientDestroyedByOneOfItsOwnHandlersShutsDownCleanly) {
  auto client = std::make_shared<Client>(server_->unix_url());
  Client* raw = client.get();
  std::promise<std::error_code> done;
  raw->async_process(Command{"PING"},
                     [client = std::move(client), &done](std::error_code ec, Reply) mutable {
                       client.reset();  // the last reference: ~Client on its own I/O thread
                       done.set_value(ec);
                     });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(future.get());
}

TEST_F(ClientTest, CloseFailsPendingAndLaterCalls) {
  Client client(server_->unix_url());
  std::promise<std::error_code> blocked;
  client.async_process(Command{"BLPOP", prefix_ + ":never", "0"},
                       [&](std::error_code ec, Reply) { blocked.set_value(ec); });
  client.connect();
  client.close();
  auto future = blocked.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(future.get(), errc::closed);
  std::error_code ec;
  client.process(Command{"PING"}, ec);
  EXPECT_EQ(ec, errc::closed);
}

// Servers of their own: these tests kill, pause, restart or reconfigure them.

TEST(ClientAuth, AclUserAndPasswordLogIn) {
  RedisServer server;
  server.command({"ACL", "SETUSER", "alice", "on", ">wonderland", "~*", "+@all"});
  Client client("redis://alice:wonderland@127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(client.process(Command{"ACL", "WHOAMI"}), Reply::make_string("alice"));
}

TEST(ClientAuth, PasswordAloneLogsInAsTheDefaultUser) {
  RedisServer server(RedisServer::Options{{"--requirepass", "s3cret"}});
  Client client("unix://:s3cret@" + server.socket_path());
  EXPECT_EQ(client.process(Command{"ACL", "WHOAMI"}), Reply::make_string("default"));
  Client client2("redis://s3cret@127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(client2.process(Command{"PING"}), Reply::make_status("PONG"));
}

TEST(ClientAuth, AWrongPasswordIsFatalAndClear) {
  RedisServer server(RedisServer::Options{{"--requirepass", "s3cret"}});
  Client client("redis://:hunter2-wrong@127.0.0.1:" + std::to_string(server.port()));
  try {
    client.connect();
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed);
    const std::string what = e.what();
    EXPECT_NE(what.find("WRONGPASS"), std::string::npos) << what;
    EXPECT_EQ(what.find("hunter2"), std::string::npos) << "the password never appears";
  }
  // Never carries on as the default user: every call fails with the same error.
  std::error_code ec;
  client.process(Command{"PING"}, ec);
  EXPECT_EQ(ec, errc::auth_failed);
}

TEST(ClientAuth, AnUnknownUserIsFatalAndNamesTheUser) {
  RedisServer server;
  Client client("redis://mallory:x@127.0.0.1:" + std::to_string(server.port()));
  try {
    client.connect();
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed);
    EXPECT_NE(std::string(e.what()).find("'mallory'"), std::string::npos) << e.what();
  }
}

TEST(ClientAuth, AMissingPasswordIsReportedAtConnect) {
  RedisServer server(RedisServer::Options{{"--requirepass", "s3cret"}});
  Client client(server.unix_url());
  try {
    client.connect();
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed);
    EXPECT_NE(std::string(e.what()).find("requires a password"), std::string::npos) << e.what();
  }
}

TEST(ClientFaults, ReconnectsAfterAServerRestart) {
  RedisServer server;
  ClientOptions options;
  options.command_timeout = 5s;
  Client client(server.tcp_url(), options);
  client.process(Command{"SET", "k", "v"});
  server.stop();
  server.start();
  // The first call after the restart may see the old connection die; the client reconnects and
  // calls made meanwhile wait for the new connection.
  EXPECT_TRUE(eventually([&] {
    std::error_code ec;
    return client.process(Command{"PING"}, ec) == Reply::make_status("PONG") && !ec;
  }));
}

TEST(ClientFaults, CallsMadeWhileReconnectingWaitForTheConnection) {
  RedisServer server;
  ClientOptions options;
  options.command_timeout = 10s;
  options.client_name = "lh-waiter";
  Client client(server.unix_url(), options);
  client.connect();
  server.stop();
  // Until the client has seen the connection close, a call goes out on it and fails with it.
  // connect() returns at once while the client believes itself connected, and throws once an
  // attempt to reconnect has failed.
  ASSERT_TRUE(eventually([&] {
    std::error_code ec;
    client.connect(ec);
    return ec == errc::connect_failed;
  }));
  std::promise<std::pair<std::error_code, Reply>> done;
  client.async_process(Command{"ECHO", "after"}, [&](std::error_code ec, Reply reply) {
    done.set_value({ec, std::move(reply)});
  });
  auto future = done.get_future();
  EXPECT_EQ(future.wait_for(100ms), std::future_status::timeout);  // nothing to answer it yet
  server.start();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  auto [ec, reply] = future.get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(reply, Reply::make_string("after"));
}

TEST(ClientFaults, ACallInFlightWhenTheConnectionDropsFailsUnlessRetrySafe) {
  RedisServer server;
  ClientOptions options;
  options.client_name = "lh-dropped";
  options.command_timeout = 10s;
  Client client(server.unix_url(), options);
  client.connect();
  std::promise<std::error_code> unsafe;
  std::promise<std::pair<std::error_code, Reply>> safe;
  client.async_process(Command{"BLPOP", "q1", "0"},
                       [&](std::error_code ec, Reply) { unsafe.set_value(ec); });
  client.async_process(Command{"BLPOP", "q2", "0"}.retry_safe(), [&](std::error_code ec, Reply r) {
    safe.set_value({ec, std::move(r)});
  });
  ASSERT_TRUE(eventually([&] {
    return server.command({"INFO", "clients"}).str.find("blocked_clients:1") != std::string::npos;
  }));
  const std::string id = client_id(server, "lh-dropped");
  ASSERT_FALSE(id.empty());
  server.command({"CLIENT", "KILL", "ID", id});

  auto unsafe_future = unsafe.get_future();
  ASSERT_EQ(unsafe_future.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(unsafe_future.get(), errc::connection_lost);

  // The retry-safe call went out again on the new connection and is answered there.
  ASSERT_TRUE(eventually([&] {
    const std::string other = client_id(server, "lh-dropped");
    return !other.empty() && other != id &&
           server.command({"INFO", "clients"}).str.find("blocked_clients:1") != std::string::npos;
  }));
  server.command({"RPUSH", "q2", "item"});
  auto safe_future = safe.get_future();
  ASSERT_EQ(safe_future.wait_for(5s), std::future_status::ready);
  auto [ec, reply] = safe_future.get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(reply, Reply::make_array({Reply::make_string("q2"), Reply::make_string("item")}));
}

TEST(ClientFaults, ACommandTimesOutAgainstAPausedServerAndRecoversAfterSigcont) {
  RedisServer server;
  ClientOptions options;
  options.command_timeout = 300ms;
  Client client(server.tcp_url(), options);
  client.connect();
  server.pause();
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  client.process(Command{"PING"}, ec);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(ec, errc::command_timeout);
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 3s);
  server.resume();
  EXPECT_TRUE(eventually([&] {
    std::error_code again;
    return client.process(Command{"ECHO", "back"}, again) == Reply::make_string("back");
  }));
}

}  // namespace
}  // namespace leasehold
