// The cluster router's decisions, driven by hand: made-up replies, errors, times and slot maps,
// no sockets.
#include "cluster_router.hpp"

#include <gtest/gtest.h>

#include "codec.hpp"
#include "leasehold/error.hpp"

namespace leasehold::detail {
namespace {

using namespace std::chrono_literals;
using Action = ReplyVerdict::Action;

const Clock::time_point kNow{Clock::duration{1'000'000'000'000}};

ReplyContext context(int redirections = 0, Clock::duration time_left = 2s) {
  return {"10.0.0.5:7000", "10.0.0.5", "seed:7000", redirections, kNow, kNow + time_left};
}

ReplyVerdict judge(const char* error, int redirections = 0, Clock::duration time_left = 2s) {
  return judge_reply(Reply::make_error(error), context(redirections, time_left));
}

TEST(ClusterRouterReply, ValuesAndOrdinaryErrorsAreDelivered) {
  for (const Reply& reply :
       {Reply::make_string("v"), Reply::make_nil(), Reply::make_integer(1),
        Reply::make_status("MOVED 1 h:1"),  // not an error: a value that reads like one
        Reply::make_error("WRONGTYPE Operation against a key holding the wrong kind of value"),
        Reply::make_error("ERR unknown command 'MOVED'"), Reply::make_error("ASKING is odd"),
        Reply::make_error("TRYAGAINLATER x"), Reply::make_error("CLUSTERDOWNTIME")}) {
    const ReplyVerdict verdict = judge_reply(reply, context());
    EXPECT_EQ(verdict.action, Action::deliver) << reply;
    EXPECT_FALSE(verdict.refresh_map) << reply;
  }
}

TEST(ClusterRouterReply, MovedFollowsToTheNewOwnerAndRefreshesTheMap) {
  const ReplyVerdict verdict = judge("MOVED 3999 10.0.0.7:7002");
  EXPECT_EQ(verdict.action, Action::follow);
  EXPECT_TRUE(verdict.refresh_map);
  EXPECT_EQ(verdict.slot, 3999);
  EXPECT_EQ(verdict.target, (RedisUrl::Endpoint{"10.0.0.7", 7002}));
}

TEST(ClusterRouterReply, AskSendsOnceToTheTargetAndKeepsTheMap) {
  const ReplyVerdict verdict = judge("ASK 12 [::1]:7003");
  EXPECT_EQ(verdict.action, Action::ask);
  EXPECT_FALSE(verdict.refresh_map);
  EXPECT_EQ(verdict.slot, 12);
  EXPECT_EQ(verdict.target, (RedisUrl::Endpoint{"::1", 7003}));
}

TEST(ClusterRouterReply, ARedirectionWithoutAHostMeansTheNodeThatAnswered) {
  const ReplyVerdict verdict = judge("MOVED 5 :7009");
  EXPECT_EQ(verdict.action, Action::follow);
  EXPECT_EQ(verdict.target, (RedisUrl::Endpoint{"10.0.0.5", 7009}));
}

TEST(ClusterRouterReply, AMalformedRedirectionFailsTheCallAsAProtocolError) {
  for (const char* bad : {"MOVED", "MOVED 3999", "MOVED 16384 h:1", "MOVED x h:1", "ASK 1 h:0",
                          "ASK 1 h", "MOVED 1 h:99999"}) {
    const ReplyVerdict verdict = judge(bad);
    EXPECT_EQ(verdict.action, Action::fail) << bad;
    EXPECT_EQ(verdict.failure.error, errc::protocol_error) << bad;
    EXPECT_FALSE(verdict.refresh_map) << bad;
    EXPECT_NE(verdict.failure.detail.find("10.0.0.5:7000"), std::string::npos)
        << verdict.failure.detail;
    EXPECT_NE(verdict.failure.detail.find(bad), std::string::npos) << verdict.failure.detail;
  }
}

TEST(ClusterRouterReply, TooManyRedirectionsFailTheCall) {
  EXPECT_EQ(judge("MOVED 1 h:1", kMaxRedirections - 1).action, Action::follow);
  EXPECT_EQ(judge("ASK 1 h:1", kMaxRedirections - 1).action, Action::ask);
  for (const char* redirection : {"MOVED 1 h:1", "ASK 1 h:1"}) {
    const ReplyVerdict verdict = judge(redirection, kMaxRedirections);
    EXPECT_EQ(verdict.action, Action::fail) << redirection;
    EXPECT_EQ(verdict.failure.error, errc::server_error);
    EXPECT_FALSE(verdict.refresh_map);
    EXPECT_NE(verdict.failure.detail.find("seed:7000"), std::string::npos);
    EXPECT_NE(verdict.failure.detail.find("more than 16 times"), std::string::npos)
        << verdict.failure.detail;
    EXPECT_NE(verdict.failure.detail.find(redirection), std::string::npos);
  }
}

TEST(ClusterRouterReply, TryAgainIsRetriedShortlyWhileTheCallHasTime) {
  const ReplyVerdict verdict = judge("TRYAGAIN Multiple keys request during rehashing of slot");
  EXPECT_EQ(verdict.action, Action::retry_later);
  EXPECT_EQ(verdict.delay, kTryAgainDelay);
  EXPECT_FALSE(verdict.refresh_map);
  // No time for another try: the caller gets the server's error.
  EXPECT_EQ(judge("TRYAGAIN x", 0, kTryAgainDelay).action, Action::deliver);
  EXPECT_EQ(judge("TRYAGAIN x", 0, kTryAgainDelay + 1ns).action, Action::retry_later);
  EXPECT_EQ(judge("TRYAGAIN", 0, -1s).action, Action::deliver);
}

TEST(ClusterRouterReply, ClusterDownIsRetriedLaterAndAlwaysRefreshesTheMap) {
  const ReplyVerdict verdict = judge("CLUSTERDOWN The cluster is down");
  EXPECT_EQ(verdict.action, Action::retry_later);
  EXPECT_EQ(verdict.delay, kClusterDownDelay);
  EXPECT_TRUE(verdict.refresh_map);
  const ReplyVerdict late = judge("CLUSTERDOWN Hash slot not served", 0, kClusterDownDelay);
  EXPECT_EQ(late.action, Action::deliver);
  EXPECT_TRUE(late.refresh_map);
}

TEST(ClusterRouterNodeError, ACallHandedBackIsRoutedAgain) {
  const NodeErrorVerdict verdict = judge_node_error(route_again_error());
  EXPECT_EQ(verdict.action, NodeErrorVerdict::Action::route_again);
  EXPECT_FALSE(verdict.refresh_map);
}

TEST(ClusterRouterNodeError, TransientFailuresFailTheCallAndRefreshTheMap) {
  for (errc e : {errc::connection_lost, errc::connect_failed, errc::connect_timeout,
                 errc::command_timeout, errc::server_loading}) {
    const NodeErrorVerdict verdict = judge_node_error(e);
    EXPECT_EQ(verdict.action, NodeErrorVerdict::Action::fail) << make_error_code(e).message();
    EXPECT_TRUE(verdict.refresh_map) << make_error_code(e).message();
  }
  for (errc e : {errc::closed, errc::auth_failed, errc::tls_failed, errc::protocol_error}) {
    const NodeErrorVerdict verdict = judge_node_error(e);
    EXPECT_EQ(verdict.action, NodeErrorVerdict::Action::fail) << make_error_code(e).message();
    EXPECT_FALSE(verdict.refresh_map) << make_error_code(e).message();
  }
}

Reply master(std::string host, long long port) {
  return Reply::make_array(
      {Reply::make_string(std::move(host)), Reply::make_integer(port), Reply::make_string("id")});
}
Reply range(long long first, long long last, Reply node) {
  return Reply::make_array(
      {Reply::make_integer(first), Reply::make_integer(last), std::move(node)});
}

const RedisUrl::Endpoint kAsked{"10.0.0.1", 7000};

TEST(ClusterRouterSlots, AMapIsApplied) {
  const SlotsVerdict verdict =
      judge_slots_reply(kAsked, {}, {},
                        {Reply::make_array({range(0, 8191, master("", 7000)),
                                            range(8192, 16383, master("b", 7001))})});
  ASSERT_EQ(verdict.action, SlotsVerdict::Action::apply);
  ASSERT_EQ(verdict.ranges.size(), 2u);
  EXPECT_EQ(verdict.ranges[0].master, kAsked);
  EXPECT_EQ(verdict.ranges[1].first, 8192u);
  EXPECT_EQ(verdict.ranges[1].master, (RedisUrl::Endpoint{"b", 7001}));
}

TEST(ClusterRouterSlots, ARefusedPasswordOrCertificateIsEveryNodesAndFatal) {
  for (errc e : {errc::auth_failed, errc::tls_failed, errc::select_failed}) {
    const SlotsVerdict verdict = judge_slots_reply(kAsked, e, "refused", {});
    EXPECT_EQ(verdict.action, SlotsVerdict::Action::fatal);
    EXPECT_EQ(verdict.failure.error, e);
    EXPECT_EQ(verdict.failure.detail, "refused");
  }
}

TEST(ClusterRouterSlots, AServerWithoutClusterSupportIsFatal) {
  const SlotsVerdict verdict = judge_slots_reply(
      kAsked, {}, {}, {Reply::make_error("ERR This instance has cluster support disabled")});
  EXPECT_EQ(verdict.action, SlotsVerdict::Action::fatal);
  EXPECT_EQ(verdict.failure.error, errc::connect_failed);
  EXPECT_NE(verdict.failure.detail.find("10.0.0.1:7000"), std::string::npos);
  EXPECT_NE(verdict.failure.detail.find("redis://"), std::string::npos);
}

TEST(ClusterRouterSlots, OtherAnswersAreThisNodesFailure) {
  const SlotsVerdict lost = judge_slots_reply(kAsked, errc::connection_lost, "gone", {});
  EXPECT_EQ(lost.action, SlotsVerdict::Action::failed);
  EXPECT_EQ(lost.failure.error, errc::connection_lost);
  EXPECT_EQ(lost.failure.detail, "gone");

  const SlotsVerdict left = judge_slots_reply(kAsked, route_again_error(), {}, {});
  EXPECT_EQ(left.action, SlotsVerdict::Action::failed);
  EXPECT_EQ(left.failure.error, errc::connection_lost);
  EXPECT_NE(left.failure.detail.find("left while asked"), std::string::npos);

  const SlotsVerdict refused =
      judge_slots_reply(kAsked, {}, {}, {Reply::make_error("NOPERM no permission for CLUSTER")});
  EXPECT_EQ(refused.action, SlotsVerdict::Action::failed);
  EXPECT_EQ(refused.failure.error, errc::no_permission);
  EXPECT_NE(refused.failure.detail.find("refused CLUSTER SLOTS: NOPERM"), std::string::npos);

  for (const Reply& bad : {Reply::make_array({}), Reply::make_integer(3),
                           Reply::make_array({range(5, 1, master("h", 1))})}) {
    const SlotsVerdict verdict = judge_slots_reply(kAsked, {}, {}, {bad});
    EXPECT_EQ(verdict.action, SlotsVerdict::Action::failed) << bad;
    EXPECT_EQ(verdict.failure.error, errc::server_error) << bad;
    EXPECT_TRUE(verdict.ranges.empty()) << bad;
  }

  const SlotsVerdict none = judge_slots_reply(kAsked, {}, {}, {});
  EXPECT_EQ(none.action, SlotsVerdict::Action::failed);
  EXPECT_EQ(none.failure.error, errc::unexpected_reply);
}

TEST(ClusterRouterSlots, SeedsAreAskedUntilTheMastersAnswer) {
  const RedisUrl::Endpoint a{"a", 1};
  const RedisUrl::Endpoint b{"b", 2};
  const RedisUrl::Endpoint seed{"s", 3};
  using Endpoints = std::vector<RedisUrl::Endpoint>;
  EXPECT_EQ(slot_map_sources({a, b}, {seed, a}, true, false), (Endpoints{a, b}));
  EXPECT_EQ(slot_map_sources({a, b}, {seed, a}, false, false), (Endpoints{a, b, seed}));
  EXPECT_EQ(slot_map_sources({a, b}, {seed, a}, true, true), (Endpoints{a, b, seed}));
  EXPECT_EQ(slot_map_sources({}, {seed, a}, true, false), (Endpoints{seed, a}));
  EXPECT_EQ(slot_map_sources({}, {seed, seed}, false, false), (Endpoints{seed}));
}

TEST(ClusterRouterKeys, RawCommandsAskTheServerForTheirKeys) {
  const std::vector<Request> requests = {Request::command({"GET", "a"}),
                                         Request::command({"SET", "k", "v"}).for_key("k"),
                                         Request::command({"MGET", "x", "y"})};
  const std::vector<Request::Keys> keys = {Request::Keys::unknown, Request::Keys::one_slot,
                                           Request::Keys::unknown};
  std::vector<std::size_t> unknown = {99};
  const std::vector<Request> lookups = key_lookups(requests, keys, unknown);
  EXPECT_EQ(unknown, (std::vector<std::size_t>{0, 2}));
  ASSERT_EQ(lookups.size(), 2u);
  EXPECT_EQ(codec::parse_command(lookups[0].bytes()),
            (std::vector<std::string>{"COMMAND", "GETKEYS", "GET", "a"}));
  EXPECT_EQ(codec::parse_command(lookups[1].bytes()),
            (std::vector<std::string>{"COMMAND", "GETKEYS", "MGET", "x", "y"}));
  EXPECT_EQ(lookups[0].keys(), Request::Keys::none);  // a lookup goes to any node
}

TEST(ClusterRouterKeys, TheServersAnswerGivesTheKeysAndSlots) {
  std::vector<Request::Keys> keys(4, Request::Keys::unknown);
  std::vector<std::uint16_t> slots(4, 0);
  const std::vector<std::size_t> unknown = {0, 1, 2, 3};
  const std::vector<Reply> replies = {
      Reply::make_array({Reply::make_string("{u}a"), Reply::make_string("{u}b")}),
      Reply::make_array({Reply::make_string("a"), Reply::make_string("b")}),
      Reply::make_error("ERR The command has no key arguments"), Reply::make_array({})};
  apply_key_lookups(unknown, replies, keys, slots);
  EXPECT_EQ(keys[0], Request::Keys::one_slot);
  EXPECT_EQ(slots[0], key_slot("u"));
  EXPECT_EQ(keys[1], Request::Keys::cross_slot);  // "a" and "b" hash apart
  EXPECT_EQ(keys[2], Request::Keys::none);
  EXPECT_EQ(keys[3], Request::Keys::none);
}

TEST(ClusterRouterFailures, SentencesNameTheClusterAndTheCause) {
  const ClusterFailure cross = cross_slot_failure(1, "seed:7000");
  EXPECT_EQ(cross.error, errc::cross_slot);
  EXPECT_NE(cross.detail.find("request 2"), std::string::npos) << cross.detail;
  EXPECT_NE(cross.detail.find("seed:7000"), std::string::npos);

  const ClusterFailure plain = unserved_failure("seed:7000", 250ms, {});
  EXPECT_EQ(plain.error, errc::command_timeout);
  EXPECT_NE(plain.detail.find("within 250 ms; the call was not sent"), std::string::npos)
      << plain.detail;
  const ClusterFailure why =
      unserved_failure("seed:7000", 250ms, {make_error_code(errc::connect_failed), "no route"});
  EXPECT_NE(why.detail.find("not sent (no route)"), std::string::npos) << why.detail;
}

struct FakeNode {
  std::string name;
};

TEST(ClusterRouterSlotMap, RangesGiveOwnersAndMastersInTheirOrder) {
  FakeNode a{"a"};
  FakeNode b{"b"};
  SlotMap<FakeNode> map;
  EXPECT_EQ(map.owner(0), nullptr);
  EXPECT_EQ(map.next_master(), nullptr);
  std::vector<RedisUrl::Endpoint> asked;
  map.assign({{0, 99, {"b", 2}}, {100, 16383, {"a", 1}}, {50, 60, {"b", 2}}},
             [&](const RedisUrl::Endpoint& endpoint) -> FakeNode& {
               asked.push_back(endpoint);
               return endpoint.host == "a" ? a : b;
             });
  EXPECT_EQ(asked.size(), 3u);
  EXPECT_EQ(map.owner(0), &b);
  EXPECT_EQ(map.owner(99), &b);
  EXPECT_EQ(map.owner(100), &a);
  EXPECT_EQ(map.owner(16383), &a);
  EXPECT_EQ(map.masters(), (std::vector<FakeNode*>{&b, &a}));
  EXPECT_TRUE(map.is_master(&a));
  FakeNode stranger{"c"};
  EXPECT_FALSE(map.is_master(&stranger));

  map.set_owner(100, stranger);  // MOVED: the slot's owner, not a master until the next map
  EXPECT_EQ(map.owner(100), &stranger);
  EXPECT_FALSE(map.is_master(&stranger));

  // A new map replaces the old one, MOVED owners included.
  map.assign({{0, 16383, {"a", 1}}}, [&](const RedisUrl::Endpoint&) -> FakeNode& { return a; });
  EXPECT_EQ(map.owner(0), &a);
  EXPECT_EQ(map.owner(100), &a);
  EXPECT_EQ(map.masters(), (std::vector<FakeNode*>{&a}));

  map.clear();
  EXPECT_EQ(map.owner(0), nullptr);
  EXPECT_TRUE(map.masters().empty());
  EXPECT_EQ(map.next_master(), nullptr);
}

TEST(ClusterRouterSlotMap, CallsAreGroupedByNodeAndKeylessOnesTakeTheMastersInTurn) {
  FakeNode a{"a"};
  FakeNode b{"b"};
  SlotMap<FakeNode> map;
  const std::uint16_t slot_a = key_slot("in-a");
  map.assign({{0, 16383, {"b", 2}}}, [&](const RedisUrl::Endpoint&) -> FakeNode& { return b; });
  map.assign({{0, 16383, {"b", 2}}, {slot_a, slot_a, {"a", 1}}},
             [&](const RedisUrl::Endpoint& endpoint) -> FakeNode& {
               return endpoint.host == "a" ? a : b;
             });
  ASSERT_EQ(map.owner(slot_a), &a);

  using Keys = Request::Keys;
  const std::uint16_t other = static_cast<std::uint16_t>((slot_a + 1) % kClusterSlots);
  const std::vector<Keys> keys = {Keys::one_slot, Keys::none, Keys::one_slot, Keys::none,
                                  Keys::one_slot};
  const std::vector<std::uint16_t> slots = {slot_a, 0, other, 0, slot_a};
  const auto plan = map.plan(keys, slots, {0, 1, 2, 3, 4});
  EXPECT_FALSE(plan.cross_slot);
  EXPECT_TRUE(plan.unrouted.empty());
  ASSERT_EQ(plan.by_node.size(), 2u);
  // The masters are b, a (in the map's order); the keyless requests 1 and 3 take them in turn.
  EXPECT_EQ(plan.by_node.at(&a), (std::vector<std::size_t>{0, 3, 4}));
  EXPECT_EQ(plan.by_node.at(&b), (std::vector<std::size_t>{1, 2}));

  const auto some = map.plan(keys, slots, {2});
  ASSERT_EQ(some.by_node.size(), 1u);
  EXPECT_EQ(some.by_node.at(&b), (std::vector<std::size_t>{2}));
}

TEST(ClusterRouterSlotMap, UnservedSlotsWaitAndCrossSlotCallsAreRefusedWhole) {
  FakeNode a{"a"};
  SlotMap<FakeNode> map;
  map.assign({{0, 99, {"a", 1}}}, [&](const RedisUrl::Endpoint&) -> FakeNode& { return a; });
  using Keys = Request::Keys;
  const std::vector<Keys> keys = {Keys::one_slot, Keys::one_slot, Keys::cross_slot,
                                  Keys::cross_slot};
  const std::vector<std::uint16_t> slots = {5, 500, 5, 5};

  const auto waiting = map.plan(keys, slots, {0, 1});
  EXPECT_FALSE(waiting.cross_slot);
  EXPECT_EQ(waiting.unrouted, (std::vector<std::size_t>{1}));
  EXPECT_EQ(waiting.by_node.at(&a), (std::vector<std::size_t>{0}));

  const auto refused = map.plan(keys, slots, {0, 3, 2});
  ASSERT_TRUE(refused.cross_slot);
  EXPECT_EQ(*refused.cross_slot, 3u);  // the first in the call's order
  EXPECT_TRUE(refused.by_node.empty());
  EXPECT_TRUE(refused.unrouted.empty());

  SlotMap<FakeNode> empty;
  const auto nothing =
      empty.plan(std::vector<Keys>{Keys::none}, std::vector<std::uint16_t>{0}, {0});
  EXPECT_EQ(nothing.unrouted, (std::vector<std::size_t>{0}));
}

}  // namespace
}  // namespace leasehold::detail
