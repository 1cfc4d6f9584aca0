// rediss://: locks over TLS against a redis-server with a TLS port and certificates made by the
// test, and every way the handshake can be refused.
#include <gtest/gtest.h>

#include <array>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <fstream>
#include <thread>

#include "eventually.hpp"
#include "leasehold/client.hpp"
#include "leasehold/lock.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"
#include "test_certificates.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisServer;
using testing::TestCertificates;

// One set of certificates for the whole file: making them takes a few hundred milliseconds.
const TestCertificates& certificates() {
  static const TestCertificates instance;
  return instance;
}

// A server with a plain port (for the admin channel) and a TLS port.
struct TlsServer {
  explicit TlsServer(bool client_certificates = true, std::vector<std::string> extra = {})
      : tls_port(testing::free_port()), server(options(tls_port, client_certificates, extra)) {}

  static RedisServer::Options options(int port, bool client_certificates,
                                      std::vector<std::string> extra) {
    RedisServer::Options options{certificates().server_args(port, client_certificates)};
    options.extra_args.insert(options.extra_args.end(), extra.begin(), extra.end());
    return options;
  }

  std::string url(const std::string& host = "127.0.0.1") const {
    return "rediss://" + host + ":" + std::to_string(tls_port);
  }

  int tls_port;
  RedisServer server;
};

ClientOptions trusting_the_test_ca() {
  ClientOptions options;
  options.tls.ca_file = certificates().ca_file();
  options.tls.cert_file = certificates().client_cert();
  options.tls.key_file = certificates().client_key();
  return options;
}

// The error connecting gives, or a failure if it connects.
Error connect_error(Client& client) {
  try {
    client.connect();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "connected";
  return Error(make_error_code(errc::connect_failed), "");
}

TEST(Tls, LocksWorkOverTlsWithAClientCertificate) {
  TlsServer tls;
  Client redis(tls.url(), trusting_the_test_ca());
  const Lock<std::string> lock{"tls", 10s};
  auto token = redis.process(lock.try_lock("invoice-7"));
  ASSERT_TRUE(token);
  EXPECT_FALSE(redis.process(lock.try_lock("invoice-7")));
  // The key is really there: seen through the plain admin channel.
  EXPECT_EQ(tls.server.command({"EXISTS", lock.key("invoice-7")}).integer, 1);
  EXPECT_TRUE(redis.process(token->extend()));
  EXPECT_TRUE(redis.process(token->release()));
  EXPECT_EQ(tls.server.command({"EXISTS", lock.key("invoice-7")}).integer, 0);
}

TEST(Tls, TheNameInTheCertificateMayBeAHostName) {
  TlsServer tls(false);
  ClientOptions options;
  options.tls.ca_file = certificates().ca_file();
  Client redis(tls.url("localhost"), options);
  EXPECT_EQ(redis.process(Command{"PING"}), Reply::make_status("PONG"));
}

TEST(Tls, AServerThatDoesNotAskForAClientCertificateNeedsOnlyTheCa) {
  TlsServer tls(false);
  ClientOptions options;
  options.tls.ca_file = certificates().ca_file();
  Client redis(tls.url(), options);
  EXPECT_EQ(redis.process(Command{"PING"}), Reply::make_status("PONG"));
}

// Many calls in flight from threads and coroutines, and values larger than a TLS record (16 KiB)
// and than the socket takes at once: every reply is matched to its own call.
TEST(Tls, PipelinedCallsFromThreadsAndCoroutinesGetTheirOwnReplies) {
  TlsServer tls;
  Client redis(tls.url(), trusting_the_test_ca());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string value = std::to_string(t) + ":" + std::to_string(i);
        if (redis.process(Command{"ECHO", value}).str != value)
          ++mismatches;
      }
    });
  }
  asio::io_context io;
  for (int c = 0; c < 100; ++c) {
    asio::co_spawn(
        io,
        [&, c]() -> asio::awaitable<void> {
          for (int i = 0; i < 20; ++i) {
            const std::string value = "co" + std::to_string(c) + ":" + std::to_string(i);
            // A named query: g++ 12 rejects an initializer-list temporary inside co_await.
            const Command echo{"ECHO", value};
            if ((co_await redis.async_process(echo, asio::use_awaitable)).str != value)
              ++mismatches;
          }
        },
        testing::rethrow_failure);
  }
  io.run();
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  const std::string big(4 << 20, 'x');
  redis.process(Command{"SET", "big", big});
  EXPECT_EQ(redis.process(Command{"GET", "big"}).str, big);
}

TEST(Tls, ReconnectsAfterAServerRestart) {
  TlsServer tls;
  ClientOptions options = trusting_the_test_ca();
  options.command_timeout = 5s;
  Client redis(tls.url(), options);
  EXPECT_EQ(redis.process(Command{"PING"}), Reply::make_status("PONG"));
  tls.server.stop();
  tls.server.start();
  EXPECT_TRUE(eventually([&] {
    std::error_code ec;
    return redis.process(Command{"PING"}, ec) == Reply::make_status("PONG") && !ec;
  }));
}

TEST(Tls, ACertificateFromAnotherCaIsRefusedAndFatal) {
  TlsServer tls;
  ClientOptions options = trusting_the_test_ca();
  options.tls.ca_file = certificates().other_ca_file();
  Client redis(tls.url(), options);
  const Error error = connect_error(redis);
  EXPECT_EQ(error.code(), errc::tls_failed);
  const std::string what = error.what();
  EXPECT_NE(what.find("certificate was refused"), std::string::npos) << what;
  EXPECT_NE(what.find(std::to_string(tls.tls_port)), std::string::npos) << what;
  // Fatal: no call is ever sent unverified, and calls fail at once with the same error.
  std::error_code ec;
  const auto before = Clock::now();
  redis.process(Command{"PING"}, ec);
  EXPECT_EQ(ec, errc::tls_failed);
  EXPECT_LT(Clock::now() - before, options.command_timeout / 2);
}

TEST(Tls, ACertificateForAnotherNameIsRefused) {
  TlsServer tls;
  ClientOptions options = trusting_the_test_ca();
  options.tls.server_name = "redis.example.com";
  Client redis(tls.url(), options);
  const Error error = connect_error(redis);
  EXPECT_EQ(error.code(), errc::tls_failed);
  EXPECT_NE(std::string(error.what()).find("mismatch"), std::string::npos) << error.what();
}

TEST(Tls, AnAddressNotInTheCertificateIsRefused) {
  // The certificate names 127.0.0.1 and localhost; the server also listens on 127.0.0.2 (the
  // whole of 127/8 is loopback), which it does not name.
  TlsServer tls(true, {"--bind", "127.0.0.1 127.0.0.2"});
  Client redis(tls.url("127.0.0.2"), trusting_the_test_ca());
  const Error error = connect_error(redis);
  EXPECT_EQ(error.code(), errc::tls_failed);
  EXPECT_NE(std::string(error.what()).find("mismatch"), std::string::npos) << error.what();
}

TEST(Tls, AServerThatWantsAClientCertificateSaysSoWhenNoneIsGiven) {
  TlsServer tls(true);
  ClientOptions options;
  options.tls.ca_file = certificates().ca_file();
  Client redis(tls.url(), options);
  const Error error = connect_error(redis);
  // Under TLS 1.3 the refusal comes after the client's handshake: as an alert (tls_failed), or,
  // when the server's reset overtakes it, as a closed connection (connect_failed, tried again).
  EXPECT_TRUE(error.code() == errc::tls_failed || error.code() == errc::connect_failed)
      << error.code().message();
  EXPECT_NE(std::string(error.what()).find("client certificate"), std::string::npos)
      << error.what();
}

// Redis waits for the end of a command line that a TLS hello never sends: the handshake times out.
TEST(Tls, TlsToAPlainPortTimesOutWithAHint) {
  RedisServer server;
  ClientOptions options;
  options.tls.ca_file = certificates().ca_file();
  options.connect_timeout = 300ms;
  Client redis("rediss://127.0.0.1:" + std::to_string(server.port()), options);
  const Error error = connect_error(redis);
  EXPECT_EQ(error.code(), errc::connect_timeout);
  EXPECT_NE(std::string(error.what()).find("during the TLS handshake"), std::string::npos)
      << error.what();
}

// A plain service that speaks first (as Redis does to a client it refuses) answers the TLS hello
// with bytes that are no TLS record: OpenSSL's "wrong version number" gets the hint.
TEST(Tls, TlsToAPlainServiceThatAnswersSaysItMayNotTakeTls) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  std::thread service([&] {
    asio::ip::tcp::socket peer(io);
    acceptor.accept(peer);
    asio::write(peer, asio::buffer(std::string("-ERR this port speaks plain RESP\r\n")));
    std::array<char, 512> sink;
    std::error_code ec;
    while (!ec)
      peer.read_some(asio::buffer(sink), ec);  // until the client gives up and closes
  });
  ClientOptions options;
  options.tls.ca_file = certificates().ca_file();
  options.connect_timeout = 5s;
  Client redis("rediss://127.0.0.1:" + std::to_string(port), options);
  const Error error = connect_error(redis);
  redis.close();
  service.join();
  EXPECT_EQ(error.code(), errc::tls_failed) << error.what();
  EXPECT_NE(std::string(error.what()).find("may not take TLS on this port"), std::string::npos)
      << error.what();
}

TEST(Tls, PlainTextToATlsPortSaysToUseRediss) {
  TlsServer tls;
  ClientOptions options;
  options.connect_timeout = 1s;
  Client redis("redis://127.0.0.1:" + std::to_string(tls.tls_port), options);
  const Error error = connect_error(redis);
  EXPECT_NE(std::string(error.what()).find("rediss://"), std::string::npos) << error.what();
}

TEST(TlsOptions, FilesThatCannotBeUsedAreErrorsAtConstruction) {
  auto expect_invalid = [](const std::string& url, const ClientOptions& options,
                           const std::string& expected) {
    try {
      Client redis(url, options);
      ADD_FAILURE() << "constructed with " << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  ClientOptions missing_ca;
  missing_ca.tls.ca_file = "/nonexistent/ca.pem";
  expect_invalid("rediss://127.0.0.1:1", missing_ca, "'/nonexistent/ca.pem'");

  ClientOptions cert_without_key;
  cert_without_key.tls.ca_file = certificates().ca_file();
  cert_without_key.tls.cert_file = certificates().client_cert();
  expect_invalid("rediss://127.0.0.1:1", cert_without_key, "key_file");

  ClientOptions wrong_key = trusting_the_test_ca();
  wrong_key.tls.key_file = certificates().server_key();
  expect_invalid("rediss://127.0.0.1:1", wrong_key, "key of the client certificate");

  const std::string garbage = certificates().dir() + "/garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  ClientOptions garbage_ca;
  garbage_ca.tls.ca_file = garbage;
  expect_invalid("rediss://127.0.0.1:1", garbage_ca, garbage);

  // Certificates with a plain URL: the caller meant TLS.
  expect_invalid("redis://127.0.0.1:1", trusting_the_test_ca(), "use rediss://");
}

}  // namespace
}  // namespace leasehold
