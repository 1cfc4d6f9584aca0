// What observers read, without a server: an announcement on a name's change channel (anyone can
// publish there, so anything else is refused), an observer's look's reply, and an Election's
// state as its leader.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "leasehold/detail/election.hpp"
#include "leasehold/detail/watch.hpp"
#include "leasehold/error.hpp"

namespace leasehold::detail {
namespace {

using namespace std::chrono_literals;

const std::string kLease = "0123456789abcdef0123456789abcdef;web-3;41;report;1764763200000";

TEST(Announcement, AVersionAloneSaysNobodyHoldsTheName) {
  const auto heard = parse_announcement("1764763200123456");
  ASSERT_TRUE(heard);
  EXPECT_EQ(heard->version, 1764763200123456u);
  EXPECT_TRUE(heard->state.lease.empty());
}

TEST(Announcement, AHolderWithItsTimeLeftTermAndProclaimedValue) {
  auto heard = parse_announcement("18 5000 3 " + kLease);
  ASSERT_TRUE(heard);
  EXPECT_EQ(heard->version, 18u);
  EXPECT_EQ(heard->state.lease, kLease);
  EXPECT_EQ(heard->state.time_left, 5000ms);
  EXPECT_EQ(heard->state.term, 3u);
  EXPECT_FALSE(heard->state.proclaimed);

  heard = parse_announcement("19 -1 3 " + kLease + "\nan address, with spaces\nand lines");
  ASSERT_TRUE(heard);
  EXPECT_EQ(heard->state.time_left, -1ms) << "a key without a TTL";
  EXPECT_EQ(heard->state.proclaimed, "an address, with spaces\nand lines");
  heard = parse_announcement("20 5000 3 " + kLease + "\n");
  ASSERT_TRUE(heard);
  EXPECT_EQ(heard->state.proclaimed, "") << "an empty value is a value";
}

TEST(Announcement, AnythingElseIsRefused) {
  for (const std::string payload :
       {"", " ", "x", "-1", "18 ", "18 x 3 a", "18 5000 -3 a", "18 5000 3", "18 5000 3 a b",
        "18 5000 3 \nvalue", "99999999999999999999999", "18\nvalue"})
    EXPECT_FALSE(parse_announcement(payload)) << "'" << payload << "'";
}

TEST(ObserverLook, ItsReplyIsTheVersionTheDutyAndTheState) {
  const auto look = parse_look(Reply::make_array(
      {Reply::make_string("42"), Reply::make_integer(1), Reply::make_string(kLease),
       Reply::make_integer(900), Reply::make_integer(7), Reply::make_string("v")}));
  ASSERT_TRUE(look) << look.detail();
  EXPECT_EQ(look->seen.version, 42u);
  EXPECT_TRUE(look->looker);
  EXPECT_EQ(look->seen.state.lease, kLease);
  EXPECT_EQ(look->seen.state.time_left, 900ms);
  EXPECT_EQ(look->seen.state.term, 7u);
  EXPECT_EQ(look->seen.state.proclaimed, "v");

  const auto free = parse_look(
      Reply::make_array({Reply::make_string("43"), Reply::make_integer(0), Reply::make_nil(),
                         Reply::make_integer(0), Reply::make_integer(0), Reply::make_nil()}));
  ASSERT_TRUE(free) << free.detail();
  EXPECT_FALSE(free->looker);
  EXPECT_TRUE(free->seen.state.lease.empty());
}

TEST(ObserverLook, AnUnexpectedReplyOrAnErrorIsAFailure) {
  EXPECT_EQ(parse_look(Reply::make_integer(1)).error(), errc::unexpected_reply);
  EXPECT_EQ(parse_look(Reply::make_array({Reply::make_string("x"), Reply::make_integer(0),
                                          Reply::make_nil(), Reply::make_integer(0),
                                          Reply::make_integer(0), Reply::make_nil()}))
                .error(),
            errc::unexpected_reply);
  EXPECT_FALSE(parse_look(Reply::make_error("WRONGTYPE Operation against a key")));
  EXPECT_EQ(parse_keep(Reply::make_integer(2)).error(), errc::unexpected_reply);
  EXPECT_TRUE(*parse_keep(Reply::make_integer(1)));
}

TEST(SeenLease, TheTimeLeftAloneIsNoChange) {
  SeenLease a{kLease, 900ms, 7, "v"};
  SeenLease b = a;
  b.time_left = 100ms;
  EXPECT_TRUE(a.same_as(b));
  b.proclaimed = std::nullopt;
  EXPECT_FALSE(a.same_as(b));
  b = a;
  b.term = 8;
  EXPECT_FALSE(a.same_as(b));
}

TEST(SeenLease, AnElectionsStateReadsAsItsLeader) {
  EXPECT_FALSE(leader_seen(SeenLease{}));
  const auto leader = leader_seen(SeenLease{kLease, 900ms, 7, "v"});
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->id_prefix, "01234567");
  ASSERT_TRUE(leader->holder);
  EXPECT_EQ(leader->holder->host, "web-3");
  EXPECT_EQ(leader->term, 7u);
  EXPECT_EQ(leader->value, "v");
  EXPECT_EQ(leader->time_left, 900ms);
}

}  // namespace
}  // namespace leasehold::detail
