// A Client behind Redis Sentinel, against a real master, two replicas and three sentinels: it
// reaches the master the sentinels name, follows a failover, and says clearly what is wrong when
// the master's name is unknown, no sentinel answers, or the sentinels refuse its password.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "build_paths.hpp"
#include "captured_log.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_sentinel.hpp"
#include "test_certificates.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
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

// Asks `client` for `name` under `lock` every `interval` until it is granted or `timeout`
// passes (errors, as while the client finds the master, count as not yet): whether it was
// granted, with the last error in `last_error`.
bool granted_within(Client& client, const Lock<std::string>& lock, const std::string& name,
                    std::chrono::milliseconds timeout, std::chrono::milliseconds interval,
                    std::string& last_error) {
  return testing::eventually(
      [&] {
        try {
          return client.process(lock.try_lock(name)).has_value();
        } catch (const Error& e) {
          last_error = e.what();
          return false;
        }
      },
      timeout, interval);
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
  RedisServer& promoted = group_->failover(30s);

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

// Sentinel demotes the old master only at its next look at it, seconds after the failover; the
// client must not wait for that (or for a READONLY): it leaves the old master when the sentinel
// leading the failover tells of the promotion, so its leases are the new master's at once, while
// the old master still says it is one. Its own group: the old master is left undemoted.
TEST(SentinelSwitchTest, AClientLeavesTheOldMasterWhenASentinelTellsOfThePromotion) {
  RedisSentinelGroup group;
  const Lock<std::string> lock{"sentinel", 5s};
  Client redis(group.url());
  ASSERT_EQ(redis.process(Command{"PING"}).str, "PONG");
  RedisServer* const old_master = group.master();
  ASSERT_NE(old_master, nullptr);
  RedisServer& promoted = group.start_failover(30s);
  const auto named = std::chrono::steady_clock::now();

  int attempt = 0;
  ASSERT_TRUE(testing::eventually(
      [&] {
        const std::string name = "switch:" + std::to_string(++attempt);
        try {
          if (!redis.process(lock.try_lock(name)))
            return false;
        } catch (const Error&) {
          return false;  // the connection was being left
        }
        return promoted.command({"EXISTS", lock.key(name)}).integer == 1;
      },
      10s, 5ms))
      << "no lease was granted by the promoted server";
  const auto moved = std::chrono::steady_clock::now() - named;
  const Reply old_role = old_master->command({"ROLE"});
  ASSERT_FALSE(old_role.elements.empty());
  EXPECT_EQ(old_role.elements[0].str, "master")
      << "the old master was demoted first: this did not show the client leaving it by itself";
  EXPECT_LT(moved, 1s) << "from the sentinel naming the promoted server";
}

// rediss-sentinel://: the sentinels, the master and the watch all over TLS, each certificate
// checked against the test CA. Its own group, with TLS ports.
TEST(SentinelTlsTest, LeasesAreTakenOverTlsAndAFailoverIsFollowed) {
  const testing::TestCertificates certificates;
  RedisSentinelGroup::Options tls_group;
  tls_group.replicas = 1;
  tls_group.sentinels = 2;
  tls_group.tls = &certificates;
  RedisSentinelGroup group(tls_group);
  ClientOptions options;
  options.tls.ca_file = certificates.ca_file();
  const Lock<std::string> lock{"sentinel", 5s};
  Client redis(group.url(), options);
  const auto token = redis.process(lock.try_lock("over-tls"));
  ASSERT_TRUE(token);
  RedisServer* const old_master = group.master();
  ASSERT_NE(old_master, nullptr);
  EXPECT_EQ(old_master->command({"EXISTS", lock.key("over-tls")}).integer, 1);

  ClientOptions untrusting;
  untrusting.tls.ca_file = certificates.other_ca_file();
  untrusting.connect_timeout = 1s;
  Client wrong(group.url(), untrusting);
  std::error_code code;
  const std::string message = error_of([&] { wrong.process(Command{"PING"}); }, code);
  EXPECT_NE(message.find("certificate"), std::string::npos) << message;

  RedisServer& promoted = group.start_failover(30s);
  const auto named = std::chrono::steady_clock::now();
  int attempt = 0;
  ASSERT_TRUE(testing::eventually(
      [&] {
        const std::string name = "tls-switch:" + std::to_string(++attempt);
        try {
          if (!redis.process(lock.try_lock(name)))
            return false;
        } catch (const Error&) {
          return false;  // the connection was being left
        }
        return promoted.command({"EXISTS", lock.key(name)}).integer == 1;
      },
      10s, 5ms))
      << "no lease was granted by the promoted server";
  EXPECT_LT(std::chrono::steady_clock::now() - named, 1s)
      << "the watch over TLS told of the promotion";
}

// The master killed outright: the sentinels find it down after down-after-milliseconds and
// promote a replica; the client, whose connection died with the master, takes leases there. Its
// own group: the test leaves a server dead.
TEST(SentinelKillTest, AfterTheMasterIsKilledLeasesAreTakenOnThePromotedReplica) {
  RedisSentinelGroup group;
  const Lock<std::string> lock{"sentinel", 5s};
  Client redis(group.url());
  ASSERT_EQ(redis.process(Command{"PING"}).str, "PONG");
  RedisServer* const killed = group.master();
  ASSERT_NE(killed, nullptr);
  killed->kill();
  const auto started = std::chrono::steady_clock::now();

  RedisServer* promoted = nullptr;
  ASSERT_TRUE(testing::eventually(
      [&] {
        for (std::size_t i = 0; i < group.server_count(); ++i) {
          RedisServer& server = group.server(i);
          if (&server == killed)
            continue;
          const Reply role = server.command({"ROLE"});
          if (!role.elements.empty() && role.elements[0].str == "master")
            promoted = &server;
        }
        return promoted != nullptr;
      },
      30s, 50ms))
      << "the sentinels promoted no replica";
  std::optional<LockToken<Lock<std::string>>> token;
  EXPECT_TRUE(testing::eventually(
      [&] {
        try {
          token = redis.process(lock.try_lock("after-kill"));
        } catch (const Error&) {
          return false;  // no master yet, or the sentinels still named the dead one
        }
        return token.has_value();
      },
      15s, 20ms));
  ASSERT_TRUE(token);
  EXPECT_EQ(promoted->command({"EXISTS", lock.key("after-kill")}).integer, 1)
      << "taken on the promoted replica";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
}

// The sentinels go on naming a master demoted behind their back for down-after-milliseconds plus
// two of their 10 s INFO periods: the client must leave it at once (READONLY) and not trust it
// again (ROLE) until it is a master again.
TEST_F(SentinelTest, AMasterDemotedBehindTheClientsBackIsLeftAndNotTrustedUntilItIsOneAgain) {
  Client redis(group_->url());
  const auto before = redis.process(lock_.try_lock(name_ + ":before"));
  ASSERT_TRUE(before);
  RedisServer& master = *group_->master();
  RedisServer& other = &master == &group_->server(1) ? group_->server(2) : group_->server(1);
  const std::string master_port = std::to_string(master.port());
  ASSERT_EQ(other.command({"REPLICAOF", "NO", "ONE"}).str, "OK");
  ASSERT_EQ(master.command({"REPLICAOF", "127.0.0.1", std::to_string(other.port())}).str, "OK");

  // The release it refuses closes the connection: its outcome is unknown, as after any lost
  // connection (a release is not sent twice).
  std::error_code code;
  const std::string released = error_of([&] { redis.process(before->release()); }, code);
  EXPECT_EQ(code, errc::connection_lost) << released;
  EXPECT_NE(released.find("is no longer the master"), std::string::npos) << released;
  // An acquire would be sent again to the master the next connection finds; the server the
  // sentinels still name is refused for its ROLE, so it waits in vain.
  const std::string waited = error_of([&] { redis.process(lock_.try_lock(name_)); }, code);
  EXPECT_EQ(code, errc::command_timeout) << waited;
  EXPECT_NE(waited.find("which the sentinels named the master, is a slave"), std::string::npos)
      << waited;
  std::string last_error;

  ASSERT_EQ(master.command({"REPLICAOF", "NO", "ONE"}).str, "OK");
  ASSERT_EQ(other.command({"REPLICAOF", "127.0.0.1", master_port}).str, "OK");
  std::optional<LockToken<Lock<std::string>>> token;
  EXPECT_TRUE(testing::eventually(
      [&] {
        try {
          token = redis.process(lock_.try_lock(name_));
        } catch (const Error& e) {
          last_error = e.what();
          return false;
        }
        return token.has_value();
      },
      10s, 20ms))
      << last_error;
  ASSERT_TRUE(token);
  EXPECT_EQ(master.command({"EXISTS", lock_.key(name_)}).integer, 1);
}

TEST_F(SentinelTest, ReplicaAcknowledgementsAreAskedForInTheUrlOrOnTheCommandLine) {
  Client acknowledged(group_->url() + "?replica_acks=2&replica_ack_timeout=500ms");
  EXPECT_EQ(acknowledged.options().replica_acks, 2);
  EXPECT_EQ(acknowledged.options().replica_ack_timeout, 500ms);
  // Both replicas have it, once they follow the master (an earlier test may have moved it).
  std::string last_error;
  EXPECT_TRUE(granted_within(acknowledged, lock_, name_, 20s, 100ms, last_error)) << last_error;

  Client too_many(group_->url() + "?replica_acks=3&replica_ack_timeout=100ms");
  std::error_code code;
  const std::string message =
      error_of([&] { too_many.process(lock_.try_lock(name_ + ":3")); }, code);
  EXPECT_EQ(code, errc::not_replicated) << message;

  const std::string dir = group_->sentinel(0).dir();
  ChildProcess refused({testing::build_paths::cli, "--redis", group_->url(), "--replica-acks", "3",
                        "run", name_ + ":cli", "--", "true"},
                       dir);
  EXPECT_EQ(refused.wait(), 69) << refused.err();
  EXPECT_NE(refused.err().find("replicas"), std::string::npos) << refused.err();
  // The URL's timeout, as long as the client's above: a loaded machine's replicas are slow.
  ChildProcess run(
      {testing::build_paths::cli, "--redis", group_->url() + "?replica_ack_timeout=500ms",
       "--replica-acks", "2", "run", name_ + ":cli", "--", "true"},
      dir);
  EXPECT_EQ(run.wait(), 0) << run.err();
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
  // The call fails at its command timeout (2 s); the margin is for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
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

TEST_F(SentinelTest, TheCommandRunsListsAndWatchesLeasesBehindSentinel) {
  const std::string dir = group_->sentinel(0).dir();
  const std::string prefix = "cli" + std::to_string(::getpid());
  const auto cli = [&](std::vector<std::string> args) {
    // A prefix of its own: the suite's other tests leave leases on the same master.
    args.insert(args.begin(),
                {testing::build_paths::cli, "--redis", group_->url(), "--prefix", prefix});
    return args;
  };
  ChildProcess run(cli({"run", name_, "--", "sh", "-c", "echo ran"}), dir);
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(run.out(), "ran\n");

  ChildProcess hold(cli({"hold", "-t", "5s", name_}), dir, ChildProcess::Input::pipe);
  ASSERT_TRUE(testing::eventually([&] { return !hold.out().empty(); }, 10s, 20ms)) << hold.err();
  ChildProcess status(cli({"status", name_}), dir);
  EXPECT_EQ(status.wait(), 0) << status.err();
  EXPECT_NE(status.out().find("held"), std::string::npos) << status.out();
  ChildProcess list(cli({"list"}), dir);
  EXPECT_EQ(list.wait(), 0) << list.err();
  EXPECT_NE(list.out().find(name_), std::string::npos) << list.out();
  ChildProcess top(cli({"top", "--once"}), dir);
  EXPECT_EQ(top.wait(), 0) << top.err();
  EXPECT_NE(top.out().find("1 lease"), std::string::npos) << top.out();
  EXPECT_NE(top.out().find("exclusive"), std::string::npos) << top.out();
  hold.close_input();
  EXPECT_EQ(hold.wait(), 0) << hold.err();
}

// A sentinel whose ACL refuses SUBSCRIBE cannot be watched for switches: the client says so once
// for each sentinel, and leases work as before.
TEST_F(SentinelTest, SentinelsThatRefuseToBeWatchedAreNamedInAWarning) {
  for (std::size_t i = 0; i < group_->options().sentinels; ++i) {
    ASSERT_EQ(group_->sentinel(i)
                  .command({"ACL", "SETUSER", "asker", "on", ">askword", "+@all", "-subscribe"})
                  .str,
              "OK");
  }
  {
    testing::CapturedLog log;
    Client redis(group_->url() + "?sentinel_user=asker&sentinel_password=askword");
    const auto token = redis.process(lock_.try_lock(name_));
    EXPECT_TRUE(token);
    EXPECT_TRUE(testing::eventually(
        [&] {
          return log.count("refused to tell of switches of master") == group_->options().sentinels;
        },
        10s, 10ms))
        << log.text();
    for (std::size_t i = 0; i < group_->options().sentinels; ++i) {
      const std::string address = "127.0.0.1:" + std::to_string(group_->sentinel(i).port());
      EXPECT_EQ(log.count("the sentinel at " + address + " refused"), 1u) << address;
    }
    EXPECT_TRUE(redis.process(token->release()));
  }
  for (std::size_t i = 0; i < group_->options().sentinels; ++i)
    group_->sentinel(i).command({"ACL", "DELUSER", "asker"});
}

TEST_F(SentinelTest, DoctorChecksTheSentinelsQuorumAndTheMastersSettings) {
  ChildProcess doctor({testing::build_paths::cli, "--redis", group_->url(), "doctor"},
                      group_->sentinel(0).dir());
  const int code = doctor.wait();
  EXPECT_TRUE(code == 0 || code == 1) << "findings, not a failure to reach Redis: " << doctor.err();
  const std::string out = doctor.out();
  for (const char* finding : {"sentinels: all 3 answer and name 127.0.0.1:", "quorum: OK",
                              "failover-time: a dead master "
                              "is replaced after down-after-milliseconds 1000 ms",
                              "min-replicas-to-write: 0"})
    EXPECT_NE(out.find(finding), std::string::npos) << finding << "\n" << out;
}

// leasehold --redis URL doctor: its exit code and its output.
std::pair<int, std::string> doctor(const std::string& url, const std::string& dir) {
  ChildProcess run({testing::build_paths::cli, "--redis", url, "doctor"}, dir);
  const int code = run.wait();
  return {code, run.out()};
}

// `url` with `parameters` added to its query.
std::string with_query(const std::string& url, const std::string& parameters) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + parameters;
}

TEST_F(SentinelTest, DoctorChecksThatSafeFailoverWaitsForEveryReplica) {
  const std::string dir = group_->sentinel(0).dir();
  const auto [code, out] = doctor(group_->url() + "?safe_failover=1", dir);
  EXPECT_NE(out.find("ok       safe-failover: every grant and extension waits for the 2 replicas "
                     "the sentinels know of, and all are up"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ok       replicas: 2 connected; safe failover waits for every replica the "
                     "sentinels know of"),
            std::string::npos)
      << out;

  // The master alone: the count is replica_acks, which must be every replica.
  RedisServer* master = group_->master();
  ASSERT_NE(master, nullptr);
  const auto [fewer, fewer_out] =
      doctor(with_query(master->tcp_url(), "safe_failover=1&replica_acks=1"), dir);
  EXPECT_EQ(fewer, 1) << fewer_out;
  EXPECT_NE(fewer_out.find("problem  replicas: 2 connected, but safe failover waits for "
                           "replica_acks=1: a failover may promote a replica that lacks a lease"),
            std::string::npos)
      << fewer_out;
  EXPECT_NE(fewer_out.find("set replica_acks=2 (every replica)"), std::string::npos) << fewer_out;
  const auto [more, more_out] =
      doctor(with_query(master->tcp_url(), "safe_failover=1&replica_acks=3"), dir);
  EXPECT_EQ(more, 1) << more_out;
  EXPECT_NE(more_out.find("problem  replicas: 2 connected, and safe failover waits for "
                          "replica_acks=3: every grant and extension fails until 3 are connected"),
            std::string::npos)
      << more_out;
  const auto [all, all_out] =
      doctor(with_query(master->tcp_url(), "safe_failover=1&replica_acks=2"), dir);
  EXPECT_NE(all_out.find("ok       replicas: 2 connected, and safe failover waits for all of them"),
            std::string::npos)
      << all_out;
}

TEST(SentinelSafeFailoverTest, AGrantCountsOnlyOnceEveryReplicaTheSentinelsKnowOfHasIt) {
  RedisSentinelGroup group;
  const Lock<std::string> lock{"safe", 5s};
  const std::string name = testing::test_prefix();
  Client safe(group.url() + "?safe_failover=1&replica_ack_timeout=500ms");
  EXPECT_TRUE(safe.options().safe_failover);
  EXPECT_EQ(safe.options().replica_acks, 0) << "the sentinels say how many";
  auto token = safe.process(lock.try_lock(name));
  ASSERT_TRUE(token);
  EXPECT_TRUE(safe.process(token->extend()));
  EXPECT_TRUE(safe.process(token->release()));

  // A replica away: the sentinels still count it (it could be on the old master's side of a
  // split), so nothing is granted, and the refused grant is given back.
  group.server(2).kill();
  std::error_code code;
  const std::string message = error_of([&] { safe.process(lock.try_lock(name)); }, code);
  EXPECT_EQ(code, errc::not_replicated) << message;
  EXPECT_NE(message.find("only 1 of 2 replicas"), std::string::npos) << message;
  // doctor says so, once the sentinels have noticed.
  std::string out;
  EXPECT_TRUE(testing::eventually(
      [&] {
        out = doctor(group.url() + "?safe_failover=1", group.sentinel(0).dir()).second;
        return out.find(
                   "warning  safe-failover: 1 of the 2 replicas the sentinels know of are "
                   "away (") != std::string::npos;
      },
      10s, 200ms))
      << out;
  EXPECT_NE(out.find("SENTINEL RESET main on each sentinel"), std::string::npos) << out;
  RedisServer& master = group.server(0);
  EXPECT_TRUE(testing::eventually(
      [&] {
        return master.command({"EXISTS", lock.key(name)}).integer == 0;
      },
      5s));

  // Back and in sync: granted again.
  group.server(2).start();
  std::string last_error;
  EXPECT_TRUE(granted_within(safe, lock, name, 20s, 100ms, last_error)) << last_error;
}

TEST(SentinelSafeFailoverTest, WithoutSentinelsTheNumberOfReplicasMustBeGiven) {
  std::error_code code;
  const std::string message =
      error_of([] { Client unknown("redis://127.0.0.1:1?safe_failover=1"); }, code);
  EXPECT_EQ(code, errc::invalid_argument) << message;
  EXPECT_NE(message.find("redis-sentinel://"), std::string::npos) << message;
  EXPECT_NE(message.find("replica_acks"), std::string::npos) << message;
  Client given("redis://127.0.0.1:1?safe_failover=1&replica_acks=2");
  EXPECT_TRUE(given.options().safe_failover);
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

  // The command takes the sentinels' password from the environment too (out of `ps`).
  ChildProcess run({"env", "LEASEHOLD_SENTINEL_PASSWORD=watchword", testing::build_paths::cli,
                    "--redis", group.url(), "run", testing::test_prefix(), "--", "true"},
                   group.sentinel(0).dir());
  EXPECT_EQ(run.wait(), 0) << run.err();
  ChildProcess refused({testing::build_paths::cli, "--redis", group.url(), "run",
                        testing::test_prefix(), "--", "true"},
                       group.sentinel(0).dir());
  EXPECT_EQ(refused.wait(), 69) << refused.err();
  EXPECT_NE(refused.err().find("sentinel_password"), std::string::npos) << refused.err();
}

}  // namespace
}  // namespace leasehold
