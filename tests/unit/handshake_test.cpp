// The connection's setup, driven by hand: what it sends for a URL, and its verdict on made-up
// replies. No server, no socket.
#include "handshake.hpp"

#include <gtest/gtest.h>

#include <asio/error.hpp>
#include <string>

#include "leasehold/request.hpp"

namespace leasehold::detail {
namespace {

std::string bytes_of(std::initializer_list<std::string_view> args) {
  return std::string(Request::command(args).bytes());
}

// The verdict after `replies` (RESP) arrived, or nothing if it wants more.
std::optional<Failure> verdict(Handshake& handshake, const std::string& replies) {
  codec::ReplyReader reader;
  reader.feed(replies.data(), replies.size());
  return handshake.on_bytes(reader);
}

// TIME's reply: 1700000000.25 s since the epoch.
const std::string kTime = "*2\r\n$10\r\n1700000000\r\n$6\r\n250000\r\n";
// HELLO's reply, shortened to the fields that are read.
const std::string kHello = "*4\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n";

bool says(const Failure& failure, const std::string& words) {
  return failure.detail.find(words) != std::string::npos;
}

TEST(Handshake, SendsAuthSelectNamePingAndTimeInOneWrite) {
  Handshake handshake(RedisUrl::parse("redis://alice:secret@127.0.0.1:7000/3"), "worker-1");
  EXPECT_EQ(handshake.request(), bytes_of({"AUTH", "alice", "secret"}) + bytes_of({"SELECT", "3"}) +
                                     bytes_of({"CLIENT", "SETNAME", "worker-1"}) +
                                     bytes_of({"PING"}) + bytes_of({"TIME"}) +
                                     bytes_of({"HELLO", "2"}));
  const std::optional<Failure> ready =
      verdict(handshake, "+OK\r\n+OK\r\n+OK\r\n+PONG\r\n" + kTime + kHello);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
}

TEST(Handshake, APlainUrlSendsOnlyPingAndTime) {
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  EXPECT_EQ(handshake.request(),
            bytes_of({"PING"}) + bytes_of({"TIME"}) + bytes_of({"HELLO", "2"}));
  Handshake with_password(RedisUrl::parse("redis://:secret@127.0.0.1:7000"), "");
  EXPECT_EQ(with_password.request(), bytes_of({"AUTH", "secret"}) + bytes_of({"PING"}) +
                                         bytes_of({"TIME"}) + bytes_of({"HELLO", "2"}));
}

TEST(Handshake, MeasuresTheServersClockAgainstHalfTheRoundTrip) {
  using namespace std::chrono_literals;
  const std::chrono::system_clock::time_point sent(1699999990s);
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000"), "", false, sent);
  codec::ReplyReader reader;
  const std::string replies = "+PONG\r\n" + kTime + kHello;
  reader.feed(replies.data(), replies.size());
  const std::optional<Failure> ready = handshake.on_bytes(reader, sent + 2s);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
  // The server said 1700000000.25 halfway through the round trip, at 1699999991 here.
  ASSERT_TRUE(handshake.server_clock_offset());
  EXPECT_EQ(*handshake.server_clock_offset(), 9250ms);
}

TEST(Handshake, BehindSentinelTheServerMustSayItIsAMaster) {
  const RedisUrl named = RedisUrl::parse("redis://10.0.0.7:6390");
  Handshake master(named, "", true);
  EXPECT_EQ(master.request(), bytes_of({"PING"}) + bytes_of({"TIME"}) + bytes_of({"HELLO", "2"}) +
                                  bytes_of({"ROLE"}));
  const std::optional<Failure> ready =
      verdict(master, "+PONG\r\n" + kTime + kHello + "*3\r\n$6\r\nmaster\r\n:10\r\n*0\r\n");
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
  EXPECT_TRUE(master.server_clock_offset()) << "TIME is read where it is, before ROLE";

  Handshake replica(named, "", true);
  const std::optional<Failure> refused = verdict(
      replica, "+PONG\r\n" + kTime + kHello +
                   "*5\r\n$5\r\nslave\r\n$8\r\n10.0.0.8\r\n:6390\r\n$9\r\nconnected\r\n:10\r\n");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error, make_error_code(errc::connect_failed))
      << "not fatal: the connection asks the sentinels again";
  EXPECT_TRUE(says(*refused, "10.0.0.7:6390, which the sentinels named the master, is a slave"))
      << refused->detail;

  Handshake no_role(named, "", true);
  const std::optional<Failure> trusted =
      verdict(no_role, "+PONG\r\n" + kTime + kHello +
                           "-NOPERM this user has no permissions to run 'role'\r\n");
  ASSERT_TRUE(trusted);
  EXPECT_FALSE(trusted->error) << "an ACL may refuse ROLE: the sentinels' word is taken";
}

TEST(Handshake, ARefusedTimeIsOnlyTheServersClockLost) {
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  const std::optional<Failure> ready = verdict(
      handshake, "+PONG\r\n-NOPERM this user has no permissions to run 'time'\r\n" + kHello);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
  EXPECT_FALSE(handshake.server_clock_offset()) << "holders are stamped by this host's clock";

  Handshake odd(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  const std::optional<Failure> failure = verdict(odd, "+PONG\r\n+OK\r\n" + kHello);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::protocol_error));
  EXPECT_TRUE(says(*failure, "answered TIME with")) << failure->detail;
}

// fuzz/corpus/handshake/time_out_of_range: a TIME reply that no clock shows is not one, rather
// than a number converted past the range of the clock's type.
TEST(Handshake, ATimeNoClockShowsIsAProtocolError) {
  for (const char* time : {"*2\r\n$10\r\n9764763200\r\n$6\r\n123456\r\n",
                           "*2\r\n$20\r\n-9223372036854775808\r\n$1\r\n0\r\n",
                           "*2\r\n$10\r\n1700000000\r\n$19\r\n9223372036854775807\r\n",
                           "*2\r\n$10\r\n1700000000\r\n$2\r\n-1\r\n"}) {
    Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000"), "");
    const std::optional<Failure> failure = verdict(handshake, "+PONG\r\n" + (time + kHello));
    ASSERT_TRUE(failure) << time;
    EXPECT_EQ(failure->error, make_error_code(errc::protocol_error)) << time;
    EXPECT_TRUE(says(*failure, "answered TIME with")) << failure->detail;
  }
}

TEST(Handshake, WaitsForEveryReply) {
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000/1"), "n");
  codec::ReplyReader reader;
  const std::string first = "+OK\r\n+OK\r\n+PO";
  reader.feed(first.data(), first.size());
  EXPECT_FALSE(handshake.on_bytes(reader));
  const std::string rest = "NG\r\n";
  reader.feed(rest.data(), rest.size());
  EXPECT_FALSE(handshake.on_bytes(reader)) << "TIME's reply is still to come";
  reader.feed(kTime.data(), kTime.size());
  EXPECT_FALSE(handshake.on_bytes(reader)) << "HELLO's reply is still to come";
  reader.feed(kHello.data(), kHello.size());
  const std::optional<Failure> ready = handshake.on_bytes(reader);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
}

TEST(Handshake, ARefusedPasswordIsFatalAndNamesTheUser) {
  Handshake handshake(RedisUrl::parse("redis://alice:wrong@127.0.0.1:7000"), "");
  const std::optional<Failure> failure = verdict(
      handshake,
      "-WRONGPASS invalid username-password pair\r\n-NOAUTH x\r\n-NOAUTH x\r\n-NOAUTH x\r\n");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::auth_failed));
  EXPECT_TRUE(says(*failure, "refused to log in as user 'alice' from the URL: WRONGPASS"))
      << failure->detail;
}

TEST(Handshake, ARefusedDatabaseIsFatal) {
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000/99"), "");
  const std::optional<Failure> failure =
      verdict(handshake, "-ERR DB index is out of range\r\n+PONG\r\n" + kTime + kHello);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::select_failed));
  EXPECT_TRUE(says(*failure, "refused SELECT 99: ERR DB index is out of range")) << failure->detail;
}

TEST(Handshake, ARefusedNameIsOnlyACourtesyLost) {
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000"), "n");
  const std::optional<Failure> ready =
      verdict(handshake, "-NOPERM no permission for CLIENT SETNAME\r\n+PONG\r\n" + kTime + kHello);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
}

TEST(Handshake, PingTellsAMissingPasswordAndALoadingServerApart) {
  Handshake no_password(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  std::optional<Failure> failure =
      verdict(no_password,
              "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n"
              "-NOAUTH Authentication required.\r\n");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::auth_failed));
  EXPECT_TRUE(says(*failure, "requires a password, and the URL gives none")) << failure->detail;

  Handshake loading(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  failure =
      verdict(loading, "-LOADING Redis is loading the dataset in memory\r\n" + kTime + kHello);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::server_loading));

  Handshake no_ping(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  failure =
      verdict(no_ping, "-NOPERM this user has no permissions to run 'ping'\r\n" + kTime + kHello);
  ASSERT_TRUE(failure);
  EXPECT_FALSE(failure->error) << "calls will say what they lack";
}

TEST(Handshake, BytesBeyondTheSetupsRepliesAreAProtocolError) {
  Handshake greeted(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  std::optional<Failure> failure = verdict(greeted, "+PONG\r\n" + kTime + kHello + "+HELLO\r\n");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::protocol_error));
  EXPECT_TRUE(says(*failure, "sent more than the replies")) << failure->detail;

  Handshake shifted(RedisUrl::parse("redis://127.0.0.1:7000"), "n");
  failure = verdict(shifted, "+WELCOME\r\n+OK\r\n+PONG\r\n" + kHello);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::protocol_error));
  EXPECT_TRUE(says(*failure, "where Redis answers OK")) << failure->detail;

  Handshake garbled(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  failure = verdict(garbled, "HTTP/1.1 400 Bad Request\r\n");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, make_error_code(errc::protocol_error));
  EXPECT_TRUE(says(*failure, "does not speak the Redis protocol")) << failure->detail;
}

TEST(Handshake, ABrokenConnectionSaysWhatToCheck) {
  Handshake plain(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  Failure failure = plain.broken(asio::error::eof, false, "", false);
  EXPECT_EQ(failure.error, make_error_code(errc::connect_failed));
  EXPECT_TRUE(says(failure, "failed while logging in")) << failure.detail;
  EXPECT_TRUE(says(failure, "use rediss://")) << failure.detail;

  Handshake tls(RedisUrl::parse("rediss://127.0.0.1:7000"), "");
  failure = tls.broken(asio::error::connection_reset, true, "", false);
  EXPECT_EQ(failure.error, make_error_code(errc::connect_failed));
  EXPECT_TRUE(says(failure, "give one in ClientOptions::tls")) << failure.detail;
  failure = tls.broken(asio::error::connection_reset, true, "", true);
  EXPECT_FALSE(says(failure, "give one")) << failure.detail;

  failure = tls.broken(asio::error::eof, true, "certificate required", true);
  EXPECT_EQ(failure.error, make_error_code(errc::tls_failed));
  EXPECT_TRUE(says(failure, "ended the TLS session while logging in: certificate required"))
      << failure.detail;
}

TEST(Handshake, LearnsTheServersVersionFromHelloAndDoesWithoutIt) {
  Handshake handshake(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  std::optional<Failure> ready = verdict(handshake, "+PONG\r\n" + kTime + kHello);
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
  EXPECT_EQ(handshake.server_version(), "7.0.15");
  EXPECT_EQ(handshake.server_major_version(), 7);

  Handshake old(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  ready = verdict(old, "+PONG\r\n" + kTime +
                           "*4\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n6.2.7\r\n");
  ASSERT_TRUE(ready);
  EXPECT_EQ(old.server_major_version(), 6);

  // A proxy that does not know HELLO, or an ACL that forbids it: the version is unknown.
  Handshake unknown(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  ready = verdict(unknown, "+PONG\r\n" + kTime + "-ERR unknown command 'HELLO'\r\n");
  ASSERT_TRUE(ready);
  EXPECT_FALSE(ready->error) << ready->detail;
  EXPECT_FALSE(unknown.server_version());
  EXPECT_FALSE(unknown.server_major_version());

  Handshake odd(RedisUrl::parse("redis://127.0.0.1:7000"), "");
  ready = verdict(odd, "+PONG\r\n" + kTime + "+OK\r\n");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->error, make_error_code(errc::protocol_error));
  EXPECT_TRUE(says(*ready, "answered HELLO with")) << ready->detail;
}

}  // namespace
}  // namespace leasehold::detail
