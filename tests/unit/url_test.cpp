#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <system_error>

#include "leasehold/error.hpp"
#include "leasehold/url.hpp"

namespace leasehold {
namespace {

using Transport = RedisUrl::Transport;

// --- Well-formed URLs --------------------------------------------------------------------------

TEST(RedisUrl, HostAloneUsesTheDefaultPortAndDatabase) {
  const RedisUrl url = RedisUrl::parse("redis://cache.example.com");
  EXPECT_EQ(url.transport, Transport::tcp);
  EXPECT_EQ(url.host, "cache.example.com");
  EXPECT_EQ(url.port, 6379);
  EXPECT_EQ(url.db, 0);
  EXPECT_TRUE(url.user.empty());
  EXPECT_TRUE(url.password.empty());
  EXPECT_FALSE(url.has_password);
  EXPECT_TRUE(url.path.empty());
}

TEST(RedisUrl, HostAndPort) {
  const RedisUrl url = RedisUrl::parse("redis://127.0.0.1:6380");
  EXPECT_EQ(url.transport, Transport::tcp);
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, 6380);
  EXPECT_EQ(url.db, 0);
  EXPECT_FALSE(url.has_password);
}

TEST(RedisUrl, PortsAtTheEndsOfTheRange) {
  EXPECT_EQ(RedisUrl::parse("redis://h:1").port, 1);
  EXPECT_EQ(RedisUrl::parse("redis://h:65535").port, 65535);
}

TEST(RedisUrl, UserAndPassword) {
  const RedisUrl url = RedisUrl::parse("redis://alice:s3cret@db.internal:7000");
  EXPECT_EQ(url.user, "alice");
  EXPECT_EQ(url.password, "s3cret");
  EXPECT_TRUE(url.has_password);
  EXPECT_EQ(url.host, "db.internal");
  EXPECT_EQ(url.port, 7000);
}

TEST(RedisUrl, LoneUserinfoIsAPassword) {
  const RedisUrl url = RedisUrl::parse("redis://secret@host");
  EXPECT_TRUE(url.user.empty());
  EXPECT_EQ(url.password, "secret");
  EXPECT_TRUE(url.has_password);
  EXPECT_EQ(url.host, "host");
  EXPECT_EQ(url.port, 6379);
}

TEST(RedisUrl, EmptyUserWithPasswordIsAPasswordAlone) {
  const RedisUrl url = RedisUrl::parse("redis://:secret@host:6390");
  EXPECT_TRUE(url.user.empty());
  EXPECT_EQ(url.password, "secret");
  EXPECT_TRUE(url.has_password);
  EXPECT_EQ(url.port, 6390);
}

TEST(RedisUrl, UserAndPasswordArePercentDecoded) {
  const RedisUrl url = RedisUrl::parse("redis://us%40er%3a1:p%40ss%3Aw%2Fo%25rd%20x@host");
  EXPECT_EQ(url.user, "us@er:1");
  EXPECT_EQ(url.password, "p@ss:w/o%rd x");
  EXPECT_EQ(url.host, "host");
}

TEST(RedisUrl, PasswordMayContainColonsAndAts) {
  // The userinfo ends at the last '@'; the user at the first ':'.
  const RedisUrl url = RedisUrl::parse("redis://bob:a:b@c@host:1234/5");
  EXPECT_EQ(url.user, "bob");
  EXPECT_EQ(url.password, "a:b@c");
  EXPECT_EQ(url.host, "host");
  EXPECT_EQ(url.port, 1234);
  EXPECT_EQ(url.db, 5);
}

TEST(RedisUrl, PercentEscapeDecodesToAnyByte) {
  const RedisUrl url = RedisUrl::parse("redis://:%00%ff%7E@host");
  EXPECT_EQ(url.password, std::string("\0\xff~", 3));
}

TEST(RedisUrl, IPv6WithPort) {
  const RedisUrl url = RedisUrl::parse("redis://[::1]:6380");
  EXPECT_EQ(url.transport, Transport::tcp);
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 6380);
  EXPECT_EQ(url.address(), "[::1]:6380");
}

TEST(RedisUrl, IPv6WithoutPortWithCredentialsAndDatabase) {
  const RedisUrl url = RedisUrl::parse("redis://u:p@[fe80::1:2]/4");
  EXPECT_EQ(url.host, "fe80::1:2");
  EXPECT_EQ(url.port, 6379);
  EXPECT_EQ(url.user, "u");
  EXPECT_EQ(url.password, "p");
  EXPECT_EQ(url.db, 4);
  EXPECT_EQ(url.address(), "[fe80::1:2]:6379");
}

TEST(RedisUrl, Database) {
  EXPECT_EQ(RedisUrl::parse("redis://host/3").db, 3);
  EXPECT_EQ(RedisUrl::parse("redis://host:6379/15").db, 15);
  EXPECT_EQ(RedisUrl::parse("redis://host/0").db, 0);
  EXPECT_EQ(RedisUrl::parse("redis://host/").db, 0);
  const RedisUrl url = RedisUrl::parse("redis://host:6381/2");
  EXPECT_EQ(url.host, "host");
  EXPECT_EQ(url.port, 6381);
}

TEST(RedisUrl, UnixSocket) {
  const RedisUrl url = RedisUrl::parse("unix:///run/redis/redis.sock");
  EXPECT_EQ(url.transport, Transport::unix_socket);
  EXPECT_EQ(url.path, "/run/redis/redis.sock");
  EXPECT_EQ(url.db, 0);
  EXPECT_FALSE(url.has_password);
  EXPECT_TRUE(url.user.empty());
  EXPECT_EQ(url.address(), "/run/redis/redis.sock");
}

TEST(RedisUrl, UnixSocketWithDatabase) {
  const RedisUrl url = RedisUrl::parse("unix:///tmp/r.sock?db=3");
  EXPECT_EQ(url.transport, Transport::unix_socket);
  EXPECT_EQ(url.path, "/tmp/r.sock");
  EXPECT_EQ(url.db, 3);
}

TEST(RedisUrl, UnixSocketWithCredentials) {
  const RedisUrl url = RedisUrl::parse("unix://user:pw@/tmp/r.sock");
  EXPECT_EQ(url.transport, Transport::unix_socket);
  EXPECT_EQ(url.user, "user");
  EXPECT_EQ(url.password, "pw");
  EXPECT_TRUE(url.has_password);
  EXPECT_EQ(url.path, "/tmp/r.sock");
  EXPECT_EQ(url.db, 0);
}

TEST(RedisUrl, UnixSocketWithPasswordAloneEscapesAndDatabase) {
  const RedisUrl url = RedisUrl::parse("unix://p%40ss@/tmp/r.sock?db=2");
  EXPECT_TRUE(url.user.empty());
  EXPECT_EQ(url.password, "p@ss");
  EXPECT_TRUE(url.has_password);
  EXPECT_EQ(url.path, "/tmp/r.sock");
  EXPECT_EQ(url.db, 2);
}

// A unix:/// URL has no userinfo: whatever follows the third slash is the socket path, even a path
// with an "@/" in it (a directory whose name ends in '@'). Taking "/tmp/dir" as a password would
// send a piece of the path to AUTH.
TEST(RedisUrl, UnixSocketPathMayContainAnAtSign) {
  const RedisUrl url = RedisUrl::parse("unix:///tmp/dir@/redis.sock");
  EXPECT_EQ(url.path, "/tmp/dir@/redis.sock");
  EXPECT_FALSE(url.has_password);
  EXPECT_TRUE(url.password.empty());
  EXPECT_TRUE(url.user.empty());
}

TEST(RedisUrl, NonThrowingParseClearsTheErrorOnSuccess) {
  std::error_code ec = make_error_code(errc::closed);
  std::string why = "untouched";
  const RedisUrl url = RedisUrl::parse("redis://h:1/2", ec, &why);
  EXPECT_FALSE(ec);
  EXPECT_EQ(url.host, "h");
  EXPECT_EQ(url.db, 2);
}

// --- to_string(), address(), mask_password() ----------------------------------------------------

TEST(RedisUrl, ToStringMasksThePasswordAndKeepsTheRest) {
  EXPECT_EQ(RedisUrl::parse("redis://alice:s3cret@host:7000/2").to_string(),
            "redis://alice:***@host:7000/2");
  EXPECT_EQ(RedisUrl::parse("redis://s3cret@host").to_string(), "redis://***@host:6379");
  EXPECT_EQ(RedisUrl::parse("redis://:s3cret@host").to_string(), "redis://***@host:6379");
  EXPECT_EQ(RedisUrl::parse("redis://host").to_string(), "redis://host:6379");
  EXPECT_EQ(RedisUrl::parse("redis://[::1]:6380/1").to_string(), "redis://[::1]:6380/1");
  EXPECT_EQ(RedisUrl::parse("unix:///tmp/r.sock").to_string(), "unix:///tmp/r.sock");
  EXPECT_EQ(RedisUrl::parse("unix:///tmp/r.sock?db=3").to_string(), "unix:///tmp/r.sock?db=3");
  EXPECT_EQ(RedisUrl::parse("unix://user:s3cret@/tmp/r.sock?db=1").to_string(),
            "unix://user:***@/tmp/r.sock?db=1");
  EXPECT_EQ(RedisUrl::parse("unix://s3cret@/tmp/r.sock").to_string(), "unix://***@/tmp/r.sock");
}

TEST(RedisUrl, ToStringNeverContainsThePassword) {
  for (const char* text : {"redis://alice:Hunter2Secret@host", "redis://Hunter2Secret@host/1",
                           "unix://u:Hunter2Secret@/tmp/s", "redis://u:Hunter2%53ecret@h"}) {
    const std::string shown = RedisUrl::parse(text).to_string();
    EXPECT_EQ(shown.find("Hunter2"), std::string::npos) << shown;
    EXPECT_NE(shown.find("***"), std::string::npos) << shown;
  }
}

TEST(RedisUrl, ToStringOfAnEmptyPasswordStillShowsThatThereIsOne) {
  const RedisUrl url = RedisUrl::parse("redis://alice:@host");
  EXPECT_TRUE(url.has_password);
  EXPECT_TRUE(url.password.empty());
  EXPECT_EQ(url.to_string(), "redis://alice:***@host:6379");
}

TEST(RedisUrl, Address) {
  EXPECT_EQ(RedisUrl::parse("redis://127.0.0.1:6380").address(), "127.0.0.1:6380");
  EXPECT_EQ(RedisUrl::parse("redis://u:p@name/3").address(), "name:6379");
  EXPECT_EQ(RedisUrl::parse("redis://[2001:db8::7]").address(), "[2001:db8::7]:6379");
  EXPECT_EQ(RedisUrl::parse("unix://u:p@/var/run/r.sock?db=1").address(), "/var/run/r.sock");
}

TEST(RedisUrl, ClusterSeeds) {
  const RedisUrl url =
      RedisUrl::parse("redis-cluster://alice:s3cret@10.0.0.1:7000,[::1]:7001,cache-3");
  EXPECT_EQ(url.transport, RedisUrl::Transport::cluster);
  ASSERT_EQ(url.seeds.size(), 3u);
  EXPECT_EQ(url.seeds[0], (RedisUrl::Endpoint{"10.0.0.1", 7000}));
  EXPECT_EQ(url.seeds[1], (RedisUrl::Endpoint{"::1", 7001}));
  EXPECT_EQ(url.seeds[2], (RedisUrl::Endpoint{"cache-3", 6379}));
  EXPECT_EQ(url.host, "10.0.0.1");
  EXPECT_EQ(url.port, 7000);
  EXPECT_EQ(url.user, "alice");
  EXPECT_EQ(url.password, "s3cret");
  EXPECT_EQ(url.address(), "10.0.0.1:7000,[::1]:7001,cache-3:6379");
  EXPECT_EQ(url.to_string(), "redis-cluster://alice:***@10.0.0.1:7000,[::1]:7001,cache-3:6379");
  EXPECT_EQ(RedisUrl::parse("redis-cluster://h:7000/0").seeds.size(), 1u);
}

TEST(RedisUrl, AClusterNodeKeepsTheCredentials) {
  const RedisUrl url = RedisUrl::parse("redis-cluster://alice:s3cret@h1:7000,h2:7001");
  const RedisUrl node = url.node({"10.1.2.3", 7005});
  EXPECT_EQ(node.transport, RedisUrl::Transport::tcp);
  EXPECT_EQ(node.address(), "10.1.2.3:7005");
  EXPECT_EQ(node.user, "alice");
  EXPECT_EQ(node.password, "s3cret");
  EXPECT_TRUE(node.seeds.empty());
}

TEST(RedisUrl, TlsSchemes) {
  const RedisUrl url = RedisUrl::parse("rediss://alice:s3cret@cache.internal:6380/2");
  EXPECT_TRUE(url.tls);
  EXPECT_EQ(url.transport, RedisUrl::Transport::tcp);
  EXPECT_EQ(url.host, "cache.internal");
  EXPECT_EQ(url.port, 6380);
  EXPECT_EQ(url.db, 2);
  EXPECT_EQ(url.user, "alice");
  EXPECT_EQ(url.to_string(), "rediss://alice:***@cache.internal:6380/2");
  EXPECT_FALSE(RedisUrl::parse("redis://cache.internal").tls);

  const RedisUrl cluster = RedisUrl::parse("rediss-cluster://h1:7000,h2:7001");
  EXPECT_TRUE(cluster.tls);
  EXPECT_EQ(cluster.transport, RedisUrl::Transport::cluster);
  EXPECT_EQ(cluster.seeds.size(), 2u);
  EXPECT_EQ(cluster.to_string(), "rediss-cluster://h1:7000,h2:7001");
  // A node of a TLS cluster is reached over TLS too.
  EXPECT_TRUE(cluster.node({"10.1.2.3", 7005}).tls);
  EXPECT_EQ(cluster.node({"10.1.2.3", 7005}).to_string(), "rediss://10.1.2.3:7005");
}

TEST(RedisUrl, SentinelsAndTheMastersName) {
  const RedisUrl url =
      RedisUrl::parse("redis-sentinel://alice:s3cret@s1,s2:26380,[::1]/my%2Dmaster/2");
  EXPECT_EQ(url.transport, Transport::sentinel);
  EXPECT_FALSE(url.tls);
  ASSERT_EQ(url.seeds.size(), 3u);
  EXPECT_EQ(url.seeds[0], (RedisUrl::Endpoint{"s1", 26379})) << "the sentinel port by default";
  EXPECT_EQ(url.seeds[1], (RedisUrl::Endpoint{"s2", 26380}));
  EXPECT_EQ(url.seeds[2], (RedisUrl::Endpoint{"::1", 26379}));
  EXPECT_EQ(url.master_name, "my-master");
  EXPECT_EQ(url.db, 2);
  EXPECT_EQ(url.user, "alice") << "the data servers' credentials";
  EXPECT_EQ(url.password, "s3cret");
  EXPECT_FALSE(url.has_sentinel_password);
  EXPECT_TRUE(url.sentinel_user.empty());
  EXPECT_EQ(url.address(), "s1:26379,s2:26380,[::1]:26379/my-master");
  EXPECT_EQ(url.to_string(),
            "redis-sentinel://alice:***@s1:26379,s2:26380,[::1]:26379/my-master/2");
}

TEST(RedisUrl, SentinelsTakeTheirOwnCredentialsAsQueryParameters) {
  const RedisUrl url = RedisUrl::parse(
      "rediss-sentinel://data-pw@s1:5000/main?sentinel_user=watcher&sentinel_password=p%26w");
  EXPECT_TRUE(url.tls);
  EXPECT_EQ(url.master_name, "main");
  EXPECT_EQ(url.db, 0);
  EXPECT_EQ(url.password, "data-pw");
  EXPECT_EQ(url.sentinel_user, "watcher");
  EXPECT_EQ(url.sentinel_password, "p&w");
  EXPECT_TRUE(url.has_sentinel_password);
  EXPECT_EQ(url.to_string(),
            "rediss-sentinel://***@s1:5000/main?sentinel_user=watcher&sentinel_password=***");
  EXPECT_EQ(mask_password("redis-sentinel://h/m?sentinel_password=Hunter2Secret&sentinel_user=u"),
            "redis-sentinel://h/m?sentinel_password=***&sentinel_user=u");
}

TEST(RedisUrl, TheMasterASentinelNamesIsReachedWithTheDataServersCredentials) {
  const RedisUrl url = RedisUrl::parse("redis-sentinel://u:pw@s1/main/3?sentinel_password=sp");
  const RedisUrl master = url.node({"10.0.0.7", 6390});
  EXPECT_EQ(master.transport, Transport::tcp);
  EXPECT_EQ(master.host, "10.0.0.7");
  EXPECT_EQ(master.port, 6390);
  EXPECT_EQ(master.user, "u");
  EXPECT_EQ(master.password, "pw");
  EXPECT_EQ(master.db, 3);
  EXPECT_TRUE(master.master_name.empty());
  EXPECT_FALSE(master.has_sentinel_password);
  EXPECT_TRUE(master.sentinel_password.empty());
}

TEST(RedisUrl, EveryUrlTakesTheCompatibilityMode) {
  EXPECT_EQ(RedisUrl::parse("redis://h").compat, RedisUrl::Compat::automatic);
  const RedisUrl tcp = RedisUrl::parse("redis://h:7000/2?compat=redis6");
  EXPECT_EQ(tcp.compat, RedisUrl::Compat::redis6);
  EXPECT_EQ(tcp.to_string(), "redis://h:7000/2?compat=redis6");
  EXPECT_EQ(RedisUrl::parse("redis://h?compat=auto").compat, RedisUrl::Compat::automatic);
  EXPECT_EQ(RedisUrl::parse("unix:///run/r.sock?db=3&compat=redis6").compat,
            RedisUrl::Compat::redis6);
  // A cluster's and a Sentinel's servers are reached in the URL's mode.
  const RedisUrl cluster = RedisUrl::parse("redis-cluster://a:7000,b:7001?compat=redis6");
  EXPECT_EQ(cluster.node(cluster.seeds[1]).compat, RedisUrl::Compat::redis6);
  const RedisUrl sentinel = RedisUrl::parse("redis-sentinel://s1/m?compat=redis6");
  EXPECT_EQ(sentinel.node({"10.0.0.5", 6379}).compat, RedisUrl::Compat::redis6);

  std::error_code ec;
  std::string why;
  RedisUrl::parse("redis://h?compat=redis5", ec, &why);
  EXPECT_EQ(ec, make_error_code(errc::invalid_url));
  EXPECT_NE(why.find("compat must be redis6"), std::string::npos) << why;
}

TEST(RedisUrl, EveryUrlTakesTheReplicaAcknowledgementParameters) {
  const RedisUrl tcp =
      RedisUrl::parse("redis://pw@h:7000/2?replica_acks=1&replica_ack_timeout=250ms");
  EXPECT_EQ(tcp.replica_acks, 1);
  EXPECT_EQ(tcp.replica_ack_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(tcp.db, 2);
  EXPECT_EQ(tcp.to_string(), "redis://***@h:7000/2?replica_acks=1&replica_ack_timeout=250ms");
  EXPECT_EQ(RedisUrl::parse("redis://h?replica_ack_timeout=1s").replica_ack_timeout,
            std::chrono::milliseconds(1000));
  EXPECT_EQ(RedisUrl::parse("redis://h?replica_ack_timeout=80").replica_ack_timeout,
            std::chrono::milliseconds(80));
  EXPECT_FALSE(RedisUrl::parse("redis://h").replica_acks);

  const RedisUrl unix_socket = RedisUrl::parse("unix:///run/r.sock?replica_acks=2&db=3");
  EXPECT_EQ(unix_socket.replica_acks, 2);
  EXPECT_EQ(unix_socket.db, 3);
  EXPECT_EQ(unix_socket.to_string(), "unix:///run/r.sock?db=3&replica_acks=2");
  EXPECT_EQ(RedisUrl::parse("redis-cluster://h:7000?replica_acks=1").replica_acks, 1);
  const RedisUrl sentinel =
      RedisUrl::parse("redis-sentinel://s1/main?replica_acks=1&sentinel_password=p");
  EXPECT_EQ(sentinel.replica_acks, 1);
  EXPECT_TRUE(sentinel.has_sentinel_password);
}

TEST(RedisUrl, EveryUrlTakesSafeFailover) {
  const RedisUrl on = RedisUrl::parse("redis-sentinel://s1,s2/main?safe_failover=1");
  EXPECT_EQ(on.safe_failover, true);
  EXPECT_EQ(on.to_string(), "redis-sentinel://s1:26379,s2:26379/main?safe_failover=1");
  const RedisUrl off = RedisUrl::parse("redis://h?safe_failover=0&replica_acks=2");
  EXPECT_EQ(off.safe_failover, false);
  EXPECT_EQ(off.to_string(), "redis://h:6379?replica_acks=2&safe_failover=0");
  EXPECT_FALSE(RedisUrl::parse("redis://h").safe_failover) << "unset: ClientOptions' stands";
}

TEST(MaskPassword, ReplacesThePasswordOnly) {
  EXPECT_EQ(mask_password("redis://alice:s3cret@host:1/2"), "redis://alice:***@host:1/2");
  EXPECT_EQ(mask_password("redis://s3cret@host"), "redis://***@host");
  EXPECT_EQ(mask_password("redis://:s3cret@host"), "redis://:***@host");
  EXPECT_EQ(mask_password("unix://u:s3cret@/tmp/s?db=1"), "unix://u:***@/tmp/s?db=1");
  EXPECT_EQ(mask_password("rediss://u:s3cret@host"), "rediss://u:***@host");
  EXPECT_EQ(mask_password("redis://u:a@b@host"), "redis://u:***@host");
}

// fuzz/corpus/url/at_sign_after_userinfo: a '@' after the userinfo, in a unix socket's path or a
// query value, does not end it; the password stays masked.
TEST(MaskPassword, AnAtSignAfterTheUserinfoDoesNotEndIt) {
  EXPECT_EQ(mask_password("unix://s3cret@/run/app:1@x/redis.sock"),
            "unix://***@/run/app:1@x/redis.sock");
  EXPECT_EQ(mask_password("unix://u:s3cret@/run/app:1@x/redis.sock"),
            "unix://u:***@/run/app:1@x/redis.sock");
  EXPECT_EQ(mask_password("redis-sentinel://s3cret@s1/m?sentinel_user=a:b@c"),
            "redis-sentinel://***@s1/m?sentinel_user=a:b@c");
  for (const char* text : {"unix://s3cret@/run/app:1@x/redis.sock",
                           "redis-sentinel://s3cret@s1/m?sentinel_user=a:b@c"}) {
    std::error_code ec;
    std::string why;
    EXPECT_EQ(RedisUrl::parse(text, ec, &why).password, "s3cret") << text;
    EXPECT_FALSE(ec) << why;
  }
}

TEST(MaskPassword, LeavesAUrlWithoutCredentialsAlone) {
  EXPECT_EQ(mask_password("redis://host:6379/1"), "redis://host:6379/1");
  EXPECT_EQ(mask_password("unix:///tmp/s?db=2"), "unix:///tmp/s?db=2");
  EXPECT_EQ(mask_password(""), "");
  EXPECT_EQ(mask_password("not a url"), "not a url");
}

// mask_password exists for URLs that may not parse, so it must also mask when the scheme is
// mistyped or missing: "host:port" strings with credentials are a common mistake.
TEST(MaskPassword, MasksEvenWithoutASchemeSeparator) {
  for (const char* text : {"redis:/alice:Hunter2Secret@host", "alice:Hunter2Secret@host:6379",
                           "redis:alice:Hunter2Secret@host", "redis//alice:Hunter2Secret@host"}) {
    const std::string masked = mask_password(text);
    EXPECT_EQ(masked.find("Hunter2Secret"), std::string::npos) << text << " -> " << masked;
    EXPECT_NE(masked.find("@host"), std::string::npos) << text << " -> " << masked;
  }
}

// --- Malformed URLs ------------------------------------------------------------------------------

struct Malformed {
  const char* url;
  const char* why;  // a piece of the explanation
};
void PrintTo(const Malformed& m, std::ostream* out) {
  *out << m.why;
}

// Every malformed URL carries a password where it can, to check it never shows.
constexpr const char* kSecret = "Hunter2Secret";

const Malformed kMalformed[] = {
    {"", "empty"},
    {"http://alice:Hunter2Secret@host", "must start with redis://, rediss://, unix://"},
    {"REDIS://host", "must start with redis://, rediss://, unix://"},
    {"host:6379", "must start with redis://, rediss://, unix://"},
    {"rediss://alice:Hunter2Secret@host:6380?cacert=/ca.pem", "ClientOptions::tls"},
    {"rediss://alice:Hunter2Secret@", "host is missing"},
    {"rediss-cluster://alice:Hunter2Secret@h:7000?x", "unknown query parameter 'x'"},
    {"redis-clusters://alice:Hunter2Secret@h:7000", "must start with"},
    {"redis://", "host is missing"},
    {"redis-cluster://", "host is missing"},
    {"redis-cluster://alice:Hunter2Secret@h:7000,", "host is missing"},
    {"redis-cluster://alice:Hunter2Secret@h:7000,h:0", "port must be a number"},
    {"redis-cluster://alice:Hunter2Secret@h:7000/2", "only database 0"},
    {"redis-cluster://alice:Hunter2Secret@h:7000?db=0", "only database 0"},
    {"redis://alice:Hunter2Secret@", "host is missing"},
    {"redis://alice:Hunter2Secret@:6379", "host is missing"},
    {"redis://Hunter2Secret@/2", "host is missing"},
    {"redis://[]:6379", "host is missing"},
    {"redis://alice:Hunter2Secret@host:0", "port"},
    {"redis://alice:Hunter2Secret@host:65536", "port"},
    {"redis://alice:Hunter2Secret@host:99999999999", "port"},
    {"redis://alice:Hunter2Secret@host:-1", "port"},
    {"redis://alice:Hunter2Secret@host:http", "port"},
    {"redis://alice:Hunter2Secret@host:63a79", "port"},
    {"redis://alice:Hunter2Secret@host:", "port is empty"},
    {"redis://alice:Hunter2Secret@host:/1", "port is empty"},
    {"redis://alice:Hunter2Secret@[::1]:", "port is empty"},
    {"redis://alice:Hunter2Secret@[::1]:0", "port"},
    {"redis://alice:Hunter2Secret@[::1", "]"},
    {"redis://alice:Hunter2Secret@[::1]6379", "port"},
    {"redis://alice:Hunter2Secret@host/abc", "database"},
    {"redis://alice:Hunter2Secret@host/-1", "database"},
    {"redis://alice:Hunter2Secret@host/1x", "database"},
    {"redis://alice:Hunter2Secret@host/1/2", "database"},
    {"redis://alice:Hunter2Secret@host/99999999999", "database"},
    {"redis://alice:Hunter2Secret@host?db=1", "the database is /N"},
    {"redis://al%zzice:Hunter2Secret@host", "user name has a bad %-escape"},
    {"redis://alice:Hunter2Secret%g0@host", "password has a bad %-escape"},
    {"redis://alice:Hunter2Secret%4@host", "password has a bad %-escape"},
    {"redis://alice:Hunter2Secret%@host", "password has a bad %-escape"},
    {"redis://Hunter2Secret%@host", "bad %-escape"},
    {"unix://", "absolute"},
    {"unix://tmp/redis.sock", "absolute"},
    {"unix://alice:Hunter2Secret@tmp/redis.sock", "absolute"},
    {"unix://alice:Hunter2Secret@/tmp/r.sock?db=x", "database"},
    {"unix://alice:Hunter2Secret@/tmp/r.sock?db=-2", "database"},
    {"unix://alice:Hunter2Secret@/tmp/r.sock?db=", "database"},
    {"unix://alice:Hunter2Secret@/tmp/r.sock?timeout=1", "the URL takes db, replica_acks"},
    {"unix://alice:Hunter2Secret@/tmp/r.sock?db=1&timeout=1", "unknown query parameter 'timeout'"},
    {"unix://alice:Hunter2Secret@/tmp/r.sock?", "unknown query parameter ''"},
    {"unix://alice:Hunter2Secret%zz@/tmp/r.sock", "password has a bad %-escape"},
    {"redis-sentinel://alice:Hunter2Secret@s1:26379", "master's name is missing"},
    {"redis-sentinel://alice:Hunter2Secret@s1:26379/", "master's name is missing"},
    {"redis-sentinel://alice:Hunter2Secret@/main", "host is missing"},
    {"redis-sentinel://alice:Hunter2Secret@s1,/main", "host is missing"},
    {"redis-sentinel://alice:Hunter2Secret@s1:0/main", "port must be a number"},
    {"redis-sentinel://alice:Hunter2Secret@s1/main/x", "database"},
    {"redis-sentinel://alice:Hunter2Secret@s1/ma%zin", "master name has a bad %-escape"},
    {"redis-sentinel://s1/main?sentinel_password=Hunter2Secret&db=1",
     "unknown query parameter 'db'"},
    {"redis-sentinel://s1/main?sentinel_password=", "sentinel_password is empty"},
    {"redis-sentinel://s1/main?sentinel_password=Hunter2Secret%z", "sentinel_password has a bad"},
    {"rediss-sentinel://alice:Hunter2Secret@s1:26379", "master's name is missing"},
    {"redis-sentinels://alice:Hunter2Secret@s1/main", "must start with"},
    {"redis://alice:Hunter2Secret@host?replica_acks=-1", "replica_acks must be a number >= 0"},
    {"redis://alice:Hunter2Secret@host?replica_acks=one", "replica_acks must be a number"},
    {"redis://alice:Hunter2Secret@host?replica_ack_timeout=0", "replica_ack_timeout must be"},
    {"redis://alice:Hunter2Secret@host?replica_ack_timeout=2h", "replica_ack_timeout must be"},
    {"redis://alice:Hunter2Secret@host?replica_ack_timeout=", "replica_ack_timeout must be"},
    {"redis-sentinel://s1/main?sentinel_password=Hunter2Secret&replica_acks=x", "replica_acks"},
    {"redis-sentinel://alice:Hunter2Secret@s1/main?safe_failover=yes",
     "safe_failover must be 1 (on) or 0 (off), got 'yes'"},
};

class MalformedUrl : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedUrl, ThrowsInvalidUrlWithAMaskedQuoteAndTheReason) {
  const Malformed& c = GetParam();
  try {
    const RedisUrl url = RedisUrl::parse(c.url);
    FAIL() << "parsed '" << c.url << "' as " << url.to_string();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_url);
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + mask_password(c.url) + "'"), std::string::npos)
        << "the message should quote the masked URL: " << what;
    EXPECT_EQ(what.find(kSecret), std::string::npos) << "the message shows the password: " << what;
    EXPECT_NE(what.find(c.why), std::string::npos)
        << "the message should say '" << c.why << "': " << what;
  }
}

TEST_P(MalformedUrl, NonThrowingParseSetsTheCodeAndTheSameReason) {
  const Malformed& c = GetParam();
  std::error_code ec;
  std::string why;
  const RedisUrl url = RedisUrl::parse(c.url, ec, &why);
  EXPECT_EQ(ec, errc::invalid_url);
  EXPECT_NE(why.find(c.why), std::string::npos) << why;
  EXPECT_EQ(why.find(kSecret), std::string::npos) << why;
  EXPECT_FALSE(url.has_password);  // a failed parse returns a default RedisUrl
  EXPECT_TRUE(url.password.empty());
  // And nothing is required of the caller to get the code alone.
  std::error_code ec2;
  RedisUrl::parse(c.url, ec2);
  EXPECT_EQ(ec2, errc::invalid_url);
}

std::string malformed_name(const ::testing::TestParamInfo<Malformed>& info) {
  return "case" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(All, MalformedUrl, ::testing::ValuesIn(kMalformed), malformed_name);

// A URL whose scheme is mistyped is malformed, and the message must not leak its password either.
TEST(RedisUrl, MistypedSchemeDoesNotLeakThePassword) {
  for (const char* text : {"redis:/alice:Hunter2Secret@host:6379", "alice:Hunter2Secret@host:6379",
                           "redis:alice:Hunter2Secret@host"}) {
    try {
      RedisUrl::parse(text);
      FAIL() << "parsed " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_url);
      EXPECT_EQ(std::string(e.what()).find(kSecret), std::string::npos)
          << "the message shows the password: " << e.what();
    }
  }
}

}  // namespace
}  // namespace leasehold
