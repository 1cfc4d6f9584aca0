// The keep-alive's schedule, stepped by hand with made-up outcomes and times: when it extends,
// when it retries, when the lease is lost and with which cause.
#include <gtest/gtest.h>

#include "keep_alive_schedule.hpp"

namespace leasehold::detail {
namespace {

using namespace std::chrono_literals;
using Kind = KeepAliveSchedule::Step::Kind;

const Clock::time_point t0 = Clock::time_point(1000s);

TEST(KeepAliveSteps, TheFirstExtensionIsDueAThirdOfTheTtlAfterTheGrant) {
  const KeepAliveSchedule schedule(300ms);
  const auto step = schedule.start(t0 + 300ms);  // granted at t0
  EXPECT_EQ(step.kind, Kind::extend_at);
  EXPECT_EQ(step.at, t0 + 100ms);
  // A token kept longer than that before its keep-alive starts is extended at once.
  EXPECT_LE(schedule.start(t0 + 50ms).at, t0);
}

TEST(KeepAliveSteps, AGrantedExtensionSchedulesTheNextFromTheNewDeadline) {
  KeepAliveSchedule schedule(300ms);
  const auto step = schedule.extended({}, true, t0 + 100ms, t0 + 400ms);
  EXPECT_EQ(step.kind, Kind::extend_at);
  EXPECT_EQ(step.at, t0 + 200ms);
  EXPECT_TRUE(step.deadline_moved);
}

TEST(KeepAliveSteps, ARefusedExtensionIsALossAtOnceWithNoCause) {
  KeepAliveSchedule schedule(300ms);
  // Even after an error: the last word was "not yours", which is not an error.
  (void)schedule.extended(make_error_code(errc::command_timeout), false, t0, t0 + 200ms);
  const auto step = schedule.extended({}, false, t0 + 10ms, t0 + 200ms);
  EXPECT_EQ(step.kind, Kind::lost);
  EXPECT_FALSE(step.cause) << step.cause.message();
}

TEST(KeepAliveSteps, ARedisErrorIsRetriedAndIsTheCauseWhenTheDeadlinePasses) {
  KeepAliveSchedule schedule(300ms);
  const auto retry =
      schedule.extended(make_error_code(errc::command_timeout), false, t0, t0 + 200ms);
  EXPECT_EQ(retry.kind, Kind::extend_at);
  EXPECT_EQ(retry.at, t0 + 30ms);  // a tenth of the TTL
  EXPECT_FALSE(retry.deadline_moved);
  EXPECT_FALSE(schedule.deadline_reached(t0 + 199ms, t0 + 200ms)) << "lost before the deadline";
  const auto lost = schedule.deadline_reached(t0 + 200ms, t0 + 200ms);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->kind, Kind::lost);
  EXPECT_EQ(lost->cause, errc::command_timeout);
}

TEST(KeepAliveSteps, AnExtensionGrantedAfterAnErrorClearsTheCause) {
  KeepAliveSchedule schedule(300ms);
  (void)schedule.extended(make_error_code(errc::connection_lost), false, t0, t0 + 200ms);
  (void)schedule.extended({}, true, t0 + 30ms, t0 + 330ms);
  const auto lost = schedule.deadline_reached(t0 + 330ms, t0 + 330ms);
  ASSERT_TRUE(lost);
  EXPECT_FALSE(lost->cause) << lost->cause.message();
}

TEST(KeepAliveSteps, AClientThatWillNeverAnswerAgainIsALossAtOnce) {
  for (const errc code : {errc::closed, errc::auth_failed, errc::select_failed}) {
    KeepAliveSchedule schedule(30s);
    const auto step = schedule.extended(make_error_code(code), false, t0, t0 + 20s);
    EXPECT_EQ(step.kind, Kind::lost) << make_error_code(code).message();
    EXPECT_EQ(step.cause, code);
  }
}

TEST(KeepAliveSteps, RetriesAreNeverCloserThan5msNorFurtherThan250msApart) {
  EXPECT_EQ(KeepAliveSchedule(10ms).retry_delay(), 5ms);
  EXPECT_EQ(KeepAliveSchedule(1s).retry_delay(), 100ms);
  EXPECT_EQ(KeepAliveSchedule(60s).retry_delay(), 250ms);
}

}  // namespace
}  // namespace leasehold::detail
