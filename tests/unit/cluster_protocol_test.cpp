// The pure parts of the cluster client: redirections and CLUSTER SLOTS.
#include "cluster_protocol.hpp"

#include <gtest/gtest.h>

namespace leasehold::detail {
namespace {

TEST(Redirection, MovedAndAskGiveTheSlotAndTheNode) {
  std::uint16_t slot = 0;
  RedisUrl::Endpoint node;
  ASSERT_TRUE(parse_redirection("MOVED 3999 127.0.0.1:6381", slot, node, "asked"));
  EXPECT_EQ(slot, 3999);
  EXPECT_EQ(node, (RedisUrl::Endpoint{"127.0.0.1", 6381}));
  ASSERT_TRUE(parse_redirection("ASK 16383 cache-2.internal:7000", slot, node, "asked"));
  EXPECT_EQ(slot, 16383);
  EXPECT_EQ(node, (RedisUrl::Endpoint{"cache-2.internal", 7000}));
}

TEST(Redirection, IPv6AndAnEmptyHost) {
  std::uint16_t slot = 0;
  RedisUrl::Endpoint node;
  ASSERT_TRUE(parse_redirection("MOVED 1 [::1]:7001", slot, node, "asked"));
  EXPECT_EQ(node, (RedisUrl::Endpoint{"::1", 7001}));
  ASSERT_TRUE(parse_redirection("MOVED 1 ::1:7001", slot, node, "asked"));  // unbracketed
  EXPECT_EQ(node, (RedisUrl::Endpoint{"::1", 7001}));
  // cluster-preferred-endpoint-type unknown-endpoint: "the node you asked, another port".
  ASSERT_TRUE(parse_redirection("MOVED 2 :7002", slot, node, "10.0.0.5"));
  EXPECT_EQ(node, (RedisUrl::Endpoint{"10.0.0.5", 7002}));
}

TEST(Redirection, MalformedOnesAreRefused) {
  std::uint16_t slot = 0;
  RedisUrl::Endpoint node;
  for (const char* bad :
       {"MOVED", "MOVED 3999", "MOVED 3999 host", "MOVED x host:1", "MOVED 16384 host:1",
        "MOVED 1 host:0", "MOVED 1 host:65536", "MOVED 12x host:1", "MOVED 1 host:7x"}) {
    EXPECT_FALSE(parse_redirection(bad, slot, node, "asked")) << bad;
  }
}

Reply node(std::string host, long long port) {
  return Reply::make_array(
      {Reply::make_string(std::move(host)), Reply::make_integer(port), Reply::make_string("id")});
}
Reply range(long long first, long long last, Reply master) {
  return Reply::make_array({Reply::make_integer(first), Reply::make_integer(last),
                            std::move(master), node("replica", 1)});
}

TEST(SlotMap, RangesWithTheirMasters) {
  const Reply slots =
      Reply::make_array({range(0, 5460, node("10.0.0.1", 7000)), range(5461, 16383, node("", 7001)),
                         range(100, 100, node("?", 7002))});
  std::vector<SlotRange> ranges;
  ASSERT_TRUE(parse_slot_map(slots, "seed", ranges));
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].first, 0u);
  EXPECT_EQ(ranges[0].last, 5460u);
  EXPECT_EQ(ranges[0].master, (RedisUrl::Endpoint{"10.0.0.1", 7000}));
  EXPECT_EQ(ranges[1].master, (RedisUrl::Endpoint{"seed", 7001}));  // empty: the node asked
  EXPECT_EQ(ranges[2].master, (RedisUrl::Endpoint{"seed", 7002}));
}

TEST(SlotMap, MalformedOrEmptyMapsAreRefused) {
  std::vector<SlotRange> ranges;
  EXPECT_FALSE(parse_slot_map(Reply::make_array({}), "seed", ranges));
  EXPECT_FALSE(parse_slot_map(Reply::make_error("ERR no"), "seed", ranges));
  EXPECT_FALSE(parse_slot_map(Reply::make_array({range(10, 5, node("h", 1))}), "seed", ranges));
  EXPECT_FALSE(parse_slot_map(Reply::make_array({range(0, 16384, node("h", 1))}), "seed", ranges));
  EXPECT_FALSE(parse_slot_map(Reply::make_array({range(0, 1, node("h", 0))}), "seed", ranges));
  EXPECT_FALSE(parse_slot_map(
      Reply::make_array({Reply::make_array({Reply::make_integer(0), Reply::make_integer(1)})}),
      "seed", ranges));
}

}  // namespace
}  // namespace leasehold::detail
