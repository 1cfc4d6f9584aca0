// Fenced writes against a real redis-server: a write presenting a fence older than the newest its
// resource has seen is refused and writes nothing; the newest, or an equal one, writes and is
// recorded; fences compare exactly, past 2^53; a record that holds no fence is an error.
#include <gtest/gtest.h>

#include <string>

#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

class FenceTest : public testing::SharedServerTest {
 protected:
  void SetUp() override { key_ = "report:" + std::to_string(unique_number()); }
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }

  Client redis_{server_->unix_url()};
  std::string key_;
};

TEST_F(FenceTest, ASetWithAnOlderFenceIsRefusedAndWritesNothing) {
  EXPECT_EQ(redis_.process(fenced_set(key_, "by 5", 5)), (FenceVerdict{true, 5}));
  EXPECT_EQ(redis_.process(fenced_set(key_, "by 7", 7)), (FenceVerdict{true, 7}));
  EXPECT_EQ(redis_.process(fenced_set(key_, "by 6", 6)), (FenceVerdict{false, 7}));
  EXPECT_EQ(get(key_), "by 7");
  EXPECT_EQ(redis_.process(fenced_set(key_, "by 7 again", 7)), (FenceVerdict{true, 7}))
      << "the holder of the newest fence writes again";
  EXPECT_EQ(get(key_), "by 7 again");
  EXPECT_EQ(get(fence_record_key(key_)), "7");
  EXPECT_EQ(key_slot(fence_record_key(key_)), key_slot(key_));
}

TEST_F(FenceTest, AHashCarriesItsOwnFence) {
  EXPECT_TRUE(redis_.process(fenced_hset(key_, 3, {{"state", "draft"}})).accepted);
  EXPECT_TRUE(redis_.process(fenced_hset(key_, 4, {{"state", "final"}, {"by", "b"}})).accepted);
  EXPECT_EQ(redis_.process(fenced_hset(key_, 3, {{"state", "stale"}})), (FenceVerdict{false, 4}));
  EXPECT_EQ(server_->command({"HGET", key_, "state"}).str, "final");
  EXPECT_EQ(server_->command({"HGET", key_, "fence"}).str, "4");
  EXPECT_TRUE(redis_.process(fenced_hset(key_, 9, {{"state", "v"}}, "version")).accepted)
      << "a field of another name keeps its own fence";
  EXPECT_THROW(fenced_hset(key_, 5, {{"fence", "1"}}), Error) << "the fence field is not data";
}

TEST_F(FenceTest, FencesCompareExactlyPastWhatADoubleHolds) {
  const std::string records_prefix = "fences" + std::to_string(unique_number());
  const FenceRecords records(records_prefix);
  constexpr std::uint64_t kLarge = (std::uint64_t{1} << 53) + 1;
  EXPECT_TRUE(redis_.process(records.check("deploy", kLarge)).accepted);
  EXPECT_EQ(redis_.process(records.check("deploy", kLarge - 1)), (FenceVerdict{false, kLarge}));
  EXPECT_EQ(redis_.process(records.check("deploy", 18446744073709551615u)).newest,
            18446744073709551615u);
  EXPECT_FALSE(redis_.process(records.check("deploy", 10)).accepted) << "fewer digits";
  EXPECT_EQ(records.key("deploy"), records_prefix + ":Fence:deploy");
  EXPECT_THROW(records.check("", 1), Error);
}

TEST_F(FenceTest, ARecordThatHoldsNoFenceIsAnError) {
  server_->command({"SET", fence_record_key(key_), "not a number"});
  try {
    redis_.process(fenced_set(key_, "x", 1));
    FAIL() << "a record holding text was taken for a fence";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a fence record"), std::string::npos) << e.what();
  }
  server_->command({"SADD", key_ + ":set", "member"});
  EXPECT_THROW(redis_.process(fenced_hset(key_ + ":set", 1, {{"a", "b"}})), Error);
  EXPECT_TRUE(server_->command({"GET", key_}).is_nil()) << "nothing written";
}

}  // namespace
}  // namespace leasehold
