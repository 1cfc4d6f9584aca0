// Finding the master behind Sentinel, driven by hand: whom it asks and in what order, what it
// sends, and what the sentinels' made-up replies mean. No server, no socket.
#include "sentinel_discovery.hpp"

#include <gtest/gtest.h>

#include <string>

#include "leasehold/request.hpp"

namespace leasehold::detail {
namespace {

using Endpoint = RedisUrl::Endpoint;

std::string bytes_of(std::initializer_list<std::string_view> args) {
  return std::string(Request::command(args).bytes());
}

// The answer after `replies` (RESP) arrived from `sentinel`, or nothing if it wants more.
std::optional<SentinelDiscovery::Answer> answer(SentinelDiscovery& discovery,
                                                const Endpoint& sentinel,
                                                const std::string& replies) {
  discovery.asking(sentinel);
  codec::ReplyReader reader;
  reader.feed(replies.data(), replies.size());
  return discovery.on_bytes(reader);
}

const std::string kMasterAt7 = "*2\r\n$8\r\n10.0.0.7\r\n$4\r\n6390\r\n";
const std::string kNoOtherSentinels = "*0\r\n";
// SENTINEL SENTINELS naming one more sentinel (and fields it does not read).
const std::string kSentinelS9 =
    "*1\r\n*6\r\n$4\r\nname\r\n$3\r\nabc\r\n$2\r\nip\r\n$2\r\ns9\r\n$4\r\nport\r\n$5\r\n26390\r\n";
// SENTINEL REPLICAS: two replicas, one of them thought down (each shortened to two fields).
const std::string kTwoReplicas =
    "*2\r\n*2\r\n$5\r\nflags\r\n$5\r\nslave\r\n*2\r\n$5\r\nflags\r\n$12\r\ns_down,slave\r\n";
const std::string kNoReplicas = "*0\r\n";

TEST(SentinelDiscovery, AsksForTheMasterAndTheOtherSentinelsInOneWrite) {
  SentinelDiscovery plain(RedisUrl::parse("redis-sentinel://pw@s1,s2/main"));
  EXPECT_EQ(plain.request(), bytes_of({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "main"}) +
                                 bytes_of({"SENTINEL", "SENTINELS", "main"}) +
                                 bytes_of({"SENTINEL", "REPLICAS", "main"}))
      << "the URL's password is the data servers'";
  SentinelDiscovery with_login(
      RedisUrl::parse("redis-sentinel://s1/main?sentinel_user=watch&sentinel_password=spw"));
  EXPECT_EQ(with_login.request(), bytes_of({"AUTH", "watch", "spw"}) +
                                      bytes_of({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "main"}) +
                                      bytes_of({"SENTINEL", "SENTINELS", "main"}) +
                                      bytes_of({"SENTINEL", "REPLICAS", "main"}));
}

TEST(SentinelDiscovery, NamesTheMasterOnceEveryReplyCame) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1,s2/main"));
  const std::vector<Endpoint> round = discovery.start_round();
  ASSERT_EQ(round.size(), 2u);
  EXPECT_FALSE(answer(discovery, round[0], kMasterAt7)) << "SENTINEL SENTINELS is still to come";
  EXPECT_FALSE(answer(discovery, round[0], kMasterAt7 + kNoOtherSentinels))
      << "SENTINEL REPLICAS is still to come";
  const auto named = answer(discovery, round[0], kMasterAt7 + kNoOtherSentinels + kTwoReplicas);
  ASSERT_TRUE(named);
  ASSERT_TRUE(named->master);
  EXPECT_EQ(*named->master, (Endpoint{"10.0.0.7", 6390}));
  EXPECT_EQ(named->replicas, 2) << "a replica thought down counts: it may be the old master's";
}

TEST(SentinelDiscovery, ASentinelThatWillNotListTheReplicasLeavesTheirNumberUnknown) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1/main"));
  const std::vector<Endpoint> round = discovery.start_round();
  const auto refused = answer(discovery, round[0],
                              kMasterAt7 + kNoOtherSentinels +
                                  "-NOPERM this user has no permissions to run the 'sentinel|"
                                  "replicas' command\r\n");
  ASSERT_TRUE(refused && refused->master) << "the master is named all the same";
  EXPECT_FALSE(refused->replicas);
  const auto none = answer(discovery, round[0], kMasterAt7 + kNoOtherSentinels + kNoReplicas);
  ASSERT_TRUE(none && none->master);
  EXPECT_EQ(none->replicas, 0);
}

TEST(SentinelDiscovery, TheSentinelThatAnsweredIsAskedFirstAndTheOnesItKnowsJoin) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1,s2,s3/main"));
  std::vector<Endpoint> round = discovery.start_round();
  EXPECT_EQ(round, (std::vector<Endpoint>{{"s1", 26379}, {"s2", 26379}, {"s3", 26379}}));
  discovery.asking(round[0]);
  discovery.unreachable("the sentinel at s1:26379 did not answer within 500 ms");
  ASSERT_TRUE(answer(discovery, round[1], kMasterAt7 + kSentinelS9 + kNoReplicas)->master);

  round = discovery.start_round();
  EXPECT_EQ(round,
            (std::vector<Endpoint>{{"s2", 26379}, {"s1", 26379}, {"s3", 26379}, {"s9", 26390}}));
}

TEST(SentinelDiscovery, ARoundWithoutAMasterSaysWhatEachSentinelSaid) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1,s2,s3:5000/main"));
  const std::vector<Endpoint> round = discovery.start_round();
  discovery.asking(round[0]);
  discovery.unreachable("could not connect to the sentinel at s1:26379: Connection refused");
  const auto unknown = answer(discovery, round[1],
                              "*-1\r\n-ERR No such master with that name\r\n"
                              "-ERR No such master with that name\r\n");
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->master);
  const auto odd = answer(discovery, round[2], "+OK\r\n+OK\r\n+OK\r\n");
  ASSERT_TRUE(odd);
  EXPECT_FALSE(odd->master);

  const Failure failure = discovery.round_failure();
  EXPECT_EQ(failure.error, make_error_code(errc::connect_failed)) << "transient: asked again";
  for (const char* said : {"no sentinel named a master for 'main'", "s1:26379: Connection refused",
                           "s2:26379 knows no master named 'main'",
                           "s3:5000 answered SENTINEL GET-MASTER-ADDR-BY-NAME"})
    EXPECT_NE(failure.detail.find(said), std::string::npos) << said << "\n" << failure.detail;
}

TEST(SentinelDiscovery, CredentialsEverySentinelRefusesAreFatal) {
  SentinelDiscovery discovery(
      RedisUrl::parse("redis-sentinel://s1,s2/main?sentinel_password=wrong"));
  std::vector<Endpoint> round = discovery.start_round();
  for (const Endpoint& sentinel : round) {
    const auto refused =
        answer(discovery, sentinel,
               "-WRONGPASS invalid username-password pair\r\n-NOAUTH Authentication required.\r\n"
               "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n");
    ASSERT_TRUE(refused);
    EXPECT_FALSE(refused->master);
  }
  const Failure failure = discovery.round_failure();
  EXPECT_EQ(failure.error, make_error_code(errc::auth_failed));
  EXPECT_NE(failure.detail.find("sentinel_password"), std::string::npos) << failure.detail;

  // A password the URL does not give, and one sentinel out of reach: not fatal, it may be back.
  SentinelDiscovery no_password(RedisUrl::parse("redis-sentinel://s1,s2/main"));
  round = no_password.start_round();
  no_password.asking(round[0]);
  no_password.unreachable("could not connect to the sentinel at s1:26379: Connection refused");
  ASSERT_TRUE(answer(no_password, round[1],
                     "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n"
                     "-NOAUTH Authentication required.\r\n"));
  const Failure some = no_password.round_failure();
  EXPECT_EQ(some.error, make_error_code(errc::connect_failed));
  EXPECT_NE(some.detail.find("add ?sentinel_password="), std::string::npos) << some.detail;
}

TEST(SentinelDiscovery, TheWatchAsksThenSubscribesToSwitchesInOneWrite) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1/main"));
  EXPECT_EQ(discovery.watch_request(),
            std::string(discovery.request()) +
                bytes_of({"SUBSCRIBE", "+switch-master", "+promoted-slave"}));
}

Reply switch_message(std::string payload, std::string event = "+switch-master") {
  return Reply::make_array({Reply::make_string("message"), Reply::make_string(std::move(event)),
                            Reply::make_string(std::move(payload))});
}

TEST(SentinelDiscovery, ASwitchOfTheUrlsMasterNamesTheNewAddress) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1/main"));
  EXPECT_EQ(discovery.switched_master(switch_message("main 10.0.0.7 6390 10.0.0.8 6391")),
            (Endpoint{"10.0.0.8", 6391}));
  EXPECT_FALSE(discovery.switched_master(switch_message("other 10.0.0.7 6390 10.0.0.8 6391")))
      << "another master's switch";
  EXPECT_FALSE(discovery.switched_master(switch_message("mainly 10.0.0.7 6390 10.0.0.8 6391")));
  EXPECT_FALSE(discovery.switched_master(switch_message("main 10.0.0.7 6390 10.0.0.8")));
  EXPECT_FALSE(discovery.switched_master(switch_message("main 10.0.0.7 6390 10.0.0.8 0")));
  EXPECT_FALSE(discovery.switched_master(switch_message("main 10.0.0.7 6390 10.0.0.8 70000")));
  EXPECT_FALSE(discovery.switched_master(switch_message("main 10.0.0.7 6390 10.0.0.8 63x")));
  EXPECT_FALSE(discovery.switched_master(switch_message("")));
  Reply subscribed = switch_message("ignored");
  subscribed.elements[0].str = "subscribe";
  EXPECT_FALSE(discovery.switched_master(subscribed)) << "the subscription's confirmation";
  EXPECT_FALSE(discovery.switched_master(Reply::make_error("ERR unknown")));
}

TEST(SentinelDiscovery, TheReplicaPromotedForTheUrlsMasterIsTheNewAddress) {
  SentinelDiscovery discovery(RedisUrl::parse("redis-sentinel://s1/main"));
  const std::string promoted = "+promoted-slave";
  EXPECT_EQ(discovery.switched_master(
                switch_message("slave 10.0.0.8:6391 10.0.0.8 6391 @ main 10.0.0.7 6390", promoted)),
            (Endpoint{"10.0.0.8", 6391}));
  EXPECT_FALSE(discovery.switched_master(
      switch_message("slave 10.0.0.8:6391 10.0.0.8 6391 @ other 10.0.0.7 6390", promoted)));
  EXPECT_FALSE(discovery.switched_master(
      switch_message("sentinel 10.0.0.8:6391 10.0.0.8 6391 @ main 10.0.0.7 6390", promoted)));
  EXPECT_FALSE(discovery.switched_master(
      switch_message("slave 10.0.0.8:6391 10.0.0.8 6391 main 10.0.0.7 6390", promoted)));
  EXPECT_FALSE(
      discovery.switched_master(switch_message("main 10.0.0.7 6390 10.0.0.8 6391", "+sdown")))
      << "an event that names no new master";
}

}  // namespace
}  // namespace leasehold::detail
