// A status read's reply (lease_status.lua: {now, the string key's value, its PTTL, waiters,
// fence, permits, then each set member and its score}) as a LeaseStatus, without a server.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "leasehold/describe.hpp"
#include "leasehold/error.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

const RwLock<std::string> kLock{"status", 30s};
constexpr long long kNow = 1'764'763'200'123;
const std::string kId = "0123456789abcdef0123456789abcdef";

Reply status_reply(long long now, std::vector<Reply> members) {
  std::vector<Reply> fields = {Reply::make_integer(now), Reply::make_string(""),
                               Reply::make_integer(-2),  Reply::make_integer(0),
                               Reply::make_integer(-1),  Reply::make_integer(-1)};
  for (Reply& member : members)
    fields.push_back(std::move(member));
  return Reply::make_array(std::move(fields));
}

Result<LeaseStatus> parse(const Reply& reply) {
  return lease_status(kLock, std::string("name")).parse(reply, Timing{});
}

TEST(StatusReply, AReadersScoreIsItsEndByTheServersClock) {
  const Result<LeaseStatus> status =
      parse(status_reply(kNow, {Reply::make_string(kId + ";web-3;41;report;1764763200000"),
                                Reply::make_string(std::to_string(kNow + 30'000)),
                                Reply::make_string(kId), Reply::make_string("1764763205123.5")}));
  ASSERT_TRUE(status) << status.detail();
  ASSERT_EQ(status->leases.size(), 2u);
  EXPECT_EQ(status->leases[0].kind, LeaseInfo::Kind::shared);
  EXPECT_EQ(status->leases[0].id_prefix, "01234567");
  EXPECT_EQ(status->leases[0].time_left, 30'000ms);
  ASSERT_TRUE(status->leases[0].holder);
  EXPECT_EQ(status->leases[0].holder->label, "report");
  EXPECT_EQ(status->leases[1].time_left, 5'000ms);
  EXPECT_FALSE(status->leases[1].holder);
}

// fuzz/corpus/status/score_out_of_range: a score or a time that no clock reaches is an unexpected
// reply, not a number converted or subtracted past the range of its type.
TEST(StatusReply, AScoreOrATimeBeyondAnyClockIsUnexpected) {
  for (const char* score : {"1e300", "-1e300", "inf", "-inf", "nan", "9.3e18", "1e400", "x"}) {
    const Result<LeaseStatus> status =
        parse(status_reply(kNow, {Reply::make_string(kId), Reply::make_string(score)}));
    EXPECT_FALSE(status) << score;
    EXPECT_EQ(status.error(), errc::unexpected_reply) << score;
  }
  for (const long long now : {-9'223'372'036'854'775'807LL - 1, 9'223'372'036'854'775'807LL}) {
    const Result<LeaseStatus> status =
        parse(status_reply(now, {Reply::make_string(kId), Reply::make_string("9e15")}));
    EXPECT_FALSE(status) << now;
    EXPECT_EQ(status.error(), errc::unexpected_reply) << now;
  }
}

}  // namespace
}  // namespace leasehold
