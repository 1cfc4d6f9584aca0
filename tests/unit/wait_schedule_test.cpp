// When a refused waiter tries again: the head at the holder's expiry, the one behind it then too
// and at the head's ticket expiry, everyone at least every recheck, no one after the deadline.
#include <gtest/gtest.h>

#include "wait_schedule.hpp"

namespace leasehold::detail {
namespace {

using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::time_point(1000s);
const Clock::time_point never = Clock::time_point::max();

TEST(WaitSchedule, TheHeadTriesJustAfterTheHoldersLeaseRunsOut) {
  EXPECT_EQ(next_turn_try({300ms, 1, 0ms}, t0, 1000ms, never), t0 + 301ms);
  // A holder with longer to go, or with no TTL at all: the recheck.
  EXPECT_EQ(next_turn_try({5000ms, 1, 0ms}, t0, 1000ms, never), t0 + 1000ms);
  EXPECT_EQ(next_turn_try({-1ms, 1, 0ms}, t0, 1000ms, never), t0 + 1000ms);
}

TEST(WaitSchedule, TheSecondTriesWhenTheHeadsTicketRunsOut) {
  EXPECT_EQ(next_turn_try({5000ms, 2, 400ms}, t0, 1000ms, never), t0 + 401ms);
  // The grace a head that was told has to take a free lock.
  EXPECT_EQ(next_turn_try({0ms, 2, 300ms}, t0, 30000ms, never), t0 + 301ms);
  // A free lock the head has not taken: the head may be dead.
  EXPECT_EQ(next_turn_try({0ms, 2, 1500ms}, t0, 1000ms, never), t0 + 1000ms);
  EXPECT_EQ(next_turn_try({0ms, 2, 20ms}, t0, 1000ms, never), t0 + 21ms);
}

// A holder that crashed tells no one, and the head may have died with it: the second looks then
// too, to give the head its grace.
TEST(WaitSchedule, TheSecondAlsoTriesWhenTheHoldersLeaseRunsOut) {
  EXPECT_EQ(next_turn_try({300ms, 2, 60000ms}, t0, 30000ms, never), t0 + 301ms);
  EXPECT_EQ(next_turn_try({300ms, 2, 100ms}, t0, 30000ms, never), t0 + 101ms);
  EXPECT_EQ(next_turn_try({-1ms, 2, 60000ms}, t0, 30000ms, never), t0 + 30000ms);
}

// Found the lock free and the waiters ahead yet to take it: their grace, then a try.
TEST(WaitSchedule, AnyoneWhoFoundTheLeaseFreeAheadTriesWhenTheHeadsGraceEnds) {
  EXPECT_EQ(next_turn_try({0ms, 5, 300ms}, t0, 30000ms, never), t0 + 301ms);
  EXPECT_EQ(next_turn_try({0ms, 5, 60000ms}, t0, 30000ms, never), t0 + 30000ms);
}

TEST(WaitSchedule, OthersTryAtTheRecheckAndNoOneAfterTheDeadline) {
  EXPECT_EQ(next_turn_try({100ms, 3, 100ms}, t0, 1000ms, never), t0 + 1000ms);
  EXPECT_EQ(next_turn_try({300ms, 1, 0ms}, t0, 1000ms, t0 + 200ms), t0 + 200ms);
  EXPECT_EQ(next_turn_try({5000ms, 7, 0ms}, t0, 1000ms, t0 + 10ms), t0 + 10ms);
}

// fuzz/corpus/reply_adapters/huge_holder_ttl: the TTLs come from the server, and a key another
// client gave a TTL of centuries must not overflow the clock; such a waiter tries at the recheck.
TEST(WaitSchedule, ATtlBeyondTheClocksRangeMeansTheRecheck) {
  const std::chrono::milliseconds huge = std::chrono::milliseconds::max();
  EXPECT_EQ(next_turn_try({huge, 1, 0ms}, t0, 1000ms, never), t0 + 1000ms);
  EXPECT_EQ(next_turn_try({0ms, 2, huge}, t0, 1000ms, never), t0 + 1000ms);
  EXPECT_EQ(next_turn_try({9'223'372'036'855ms, 1, 0ms}, t0, 1000ms, never), t0 + 1000ms);
}

}  // namespace
}  // namespace leasehold::detail
