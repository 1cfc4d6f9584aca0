// ReconnectSchedule, stepped by hand: the waits between attempts grow from the least to the
// most (doubling, less up to 25% of jitter), a connection made starts them over, a fatal failure
// ends the loop, and the one-time checks run after the first connection only.
#include <gtest/gtest.h>

#include "reconnect_schedule.hpp"

namespace leasehold::detail {
namespace {

using namespace std::chrono_literals;

const Failure kRefused{make_error_code(errc::connect_failed), "connection refused"};

TEST(ReconnectSchedule, WaitsGrowFromTheLeastToTheMostWithJitterBelowTheDoubledWait) {
  for (std::uint32_t seed : {1u, 2u, 3u, 42u}) {
    ReconnectSchedule schedule(100ms, 2000ms, seed);
    std::chrono::milliseconds previous{0};
    for (int attempt = 0; attempt < 12; ++attempt) {
      const auto wait = schedule.on_attempt_failed(kRefused);
      ASSERT_TRUE(wait);
      if (attempt == 0) {
        EXPECT_EQ(*wait, 100ms) << "the first wait is the least";
      } else {
        const auto doubled = std::min(previous * 2, 2000ms);
        EXPECT_LE(*wait, doubled) << "seed " << seed << ", attempt " << attempt;
        EXPECT_GE(*wait, doubled - doubled / 4) << "seed " << seed << ", attempt " << attempt;
      }
      EXPECT_LE(*wait, 2000ms);
      previous = *wait;
    }
    EXPECT_GE(previous, 1500ms) << "it reached the most, less the jitter";
  }
}

TEST(ReconnectSchedule, AConnectionMadeStartsTheWaitsOver) {
  ReconnectSchedule schedule(100ms, 2000ms, 7);
  for (int attempt = 0; attempt < 6; ++attempt)
    schedule.on_attempt_failed(kRefused);
  schedule.on_connected();
  EXPECT_EQ(schedule.on_lost(), 100ms) << "the wait after a lost connection starts at the least";
  const auto next = schedule.on_attempt_failed(kRefused);
  ASSERT_TRUE(next);
  EXPECT_GT(*next, 100ms);
  EXPECT_LE(*next, 200ms);
}

TEST(ReconnectSchedule, AFatalFailureEndsTheLoop) {
  ReconnectSchedule schedule(100ms, 2000ms, 7);
  EXPECT_FALSE(schedule.on_attempt_failed({make_error_code(errc::auth_failed), "WRONGPASS"}));
  EXPECT_FALSE(schedule.on_attempt_failed({make_error_code(errc::select_failed), "bad db"}));
  EXPECT_TRUE(schedule.on_attempt_failed(kRefused)) << "a refused connection is tried again";
}

TEST(ReconnectSchedule, TheOneTimeChecksRunAfterTheFirstConnectionOnly) {
  ReconnectSchedule schedule(100ms, 2000ms, 7);
  schedule.on_attempt_failed(kRefused);
  EXPECT_TRUE(schedule.on_connected());
  schedule.on_lost();
  EXPECT_FALSE(schedule.on_connected());
  EXPECT_FALSE(schedule.on_connected());
}

}  // namespace
}  // namespace leasehold::detail
