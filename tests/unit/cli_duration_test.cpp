// The leasehold command's durations and cron lease defaults.
#include <gtest/gtest.h>

#include "cli.hpp"

namespace leasehold::cli {
namespace {

using namespace std::chrono_literals;

TEST(CliDurations, AcceptANumberAndAUnit) {
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("30s"), 30s);
  EXPECT_EQ(parse_duration("5m"), 5min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("0.25m"), 15s);
  EXPECT_EQ(parse_duration("0s"), 0ms);
}

TEST(CliDurations, RefuseEverythingElse) {
  for (const char* bad : {"", "5", "5x", "s", "ms", "-1s", "+1s", "1.2.3s", ".5s", "5.s", "1 s",
                          "1S", "1sec", "1e3ms", "nan s", "1s ", " 1s", "99999999999999h"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
  try {
    require_duration("--ttl", "5x");
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message.find("--ttl: '5x' is not a duration"), std::string::npos);
  }
}

TEST(CliDurations, FormatForPeople) {
  EXPECT_EQ(format_duration(250ms), "250 ms");
  EXPECT_EQ(format_duration(1500ms), "1.5 s");
  EXPECT_EQ(format_duration(125s), "2 m 5 s");
  EXPECT_EQ(format_duration(3h + 10min), "3 h 10 m");
}

TEST(CliCron, TheDefaultLeaseIsTenPercentAndAtLeastOneSecondShorter) {
  EXPECT_EQ(default_cron_lease(1h), 54min);
  EXPECT_EQ(default_cron_lease(5s), 4s);             // 10% would be 4.5 s: at least 1 s less
  EXPECT_EQ(default_cron_lease(20s), 18s);           // 10%
  EXPECT_FALSE(default_cron_lease(1s).has_value());  // nothing is left: --lease is needed
}

}  // namespace
}  // namespace leasehold::cli
