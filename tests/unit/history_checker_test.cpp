// The history checker's self-tests on synthetic histories. Each property comes as a pair: a
// history the checker must accept and one, differing by as little as possible, that it must
// reject, so that a checker that accepts everything fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "history.hpp"
#include "history_checker.hpp"

namespace leasehold::testing {
namespace {

constexpr std::int64_t kMs = 1'000'000;

// Builds histories by hand; times are nanoseconds on an arbitrary scale.
class History {
 public:
  History& grant(int pid, std::uint64_t lease, const std::string& name, std::int64_t t,
                 std::int64_t deadline, char mode = 'w') {
    add({.t = t,
         .pid = pid,
         .kind = EventKind::acquire_ok,
         .name = name,
         .lease = lease,
         .mode = mode,
         .deadline = deadline});
    return *this;
  }
  History& extend(int pid, std::uint64_t lease, const std::string& name, std::int64_t t,
                  std::int64_t deadline) {
    add({.t = t,
         .pid = pid,
         .kind = EventKind::extend_ok,
         .name = name,
         .lease = lease,
         .deadline = deadline});
    return *this;
  }
  History& release(int pid, std::uint64_t lease, const std::string& name, std::int64_t t) {
    add({.t = t, .pid = pid, .kind = EventKind::release_call, .name = name, .lease = lease});
    return *this;
  }
  History& section(int pid, const std::string& name, std::int64_t begin, std::int64_t end,
                   bool valid, char mode = 'w', std::uint64_t lease = 0) {
    add({.t = begin,
         .pid = pid,
         .tid = pid,
         .kind = EventKind::cs_begin,
         .name = name,
         .lease = lease,
         .mode = mode});
    add({.t = end,
         .pid = pid,
         .tid = pid,
         .kind = EventKind::cs_end,
         .name = name,
         .lease = lease,
         .mode = mode,
         .valid = valid});
    return *this;
  }
  // A grant that came with fencing number `fence`, asked for at `asked`.
  History& fenced_grant(int pid, std::uint64_t lease, const std::string& name, std::int64_t asked,
                        std::int64_t t, std::int64_t deadline, std::int64_t fence) {
    add({.t = t,
         .pid = pid,
         .kind = EventKind::acquire_ok,
         .name = name,
         .lease = lease,
         .deadline = deadline,
         .value = fence,
         .start = asked});
    return *this;
  }
  History& fence(int pid, const std::string& name, std::int64_t sent, std::int64_t answered,
                 std::int64_t value, bool accepted) {
    add({.t = answered,
         .pid = pid,
         .kind = EventKind::fence,
         .name = name,
         .value = value,
         .ok = accepted,
         .start = sent});
    return *this;
  }
  History& counter(int pid, const std::string& name, std::int64_t t, std::int64_t read,
                   std::int64_t wrote, bool confirmed = true) {
    add({.t = t,
         .pid = pid,
         .kind = EventKind::counter,
         .name = name,
         .value = wrote,
         .read = read,
         .ok = confirmed,
         .start = t - 1});
    return *this;
  }
  // Reads of a counter at the start and the end of a section of pid's thread.
  History& counter_check(int pid, const std::string& name, std::int64_t t, std::int64_t first,
                         std::int64_t second) {
    add({.t = t,
         .pid = pid,
         .tid = pid,
         .kind = EventKind::counter_check,
         .name = name,
         .value = second,
         .read = first});
    return *this;
  }
  History& event(Event e) {
    add(std::move(e));
    return *this;
  }

  std::vector<Event> events() const {
    auto sorted = events_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Event& a, const Event& b) { return a.t < b.t; });
    return sorted;
  }
  HistoryReport check() const { return check_history(events()); }

 private:
  void add(Event e) { events_.push_back(std::move(e)); }
  std::vector<Event> events_;
};

// --- Critical sections -------------------------------------------------------------------------

TEST(HistoryChecker, TouchingSectionsDoNotOverlap) {
  const auto report = History()
                          .section(1, "a", 0, 10 * kMs, true)
                          .section(2, "a", 10 * kMs, 20 * kMs, true)
                          .section(3, "a", 20 * kMs, 30 * kMs, true)
                          .check();
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_EQ(report.valid_sections, 3u);
}

TEST(HistoryChecker, ASectionOverlappingByOneNanosecondIsCaught) {
  const auto report = History()
                          .section(1, "a", 0, 10 * kMs + 1, true)
                          .section(2, "a", 10 * kMs, 20 * kMs, true)
                          .check();
  ASSERT_EQ(report.section_overlaps.size(), 1u) << report.summary();
  EXPECT_EQ(report.section_overlaps[0].first.pid, 1);
  EXPECT_EQ(report.section_overlaps[0].second.pid, 2);
}

TEST(HistoryChecker, EveryOverlappingSectionIsCaughtNotJustTheFirst) {
  // Both later sections overlap the long first one.
  const auto behind_long = History()
                               .section(1, "a", 0, 100 * kMs, true)
                               .section(2, "a", 10 * kMs, 20 * kMs, true)
                               .section(3, "a", 30 * kMs, 40 * kMs, true)
                               .check();
  EXPECT_EQ(behind_long.section_overlaps.size(), 2u) << behind_long.summary();
  const auto repeated = History()
                            .section(3, "c", 0, 50 * kMs, true)
                            .section(4, "c", 10 * kMs, 20 * kMs, true)
                            .section(3, "c", 60 * kMs, 90 * kMs, true)
                            .section(4, "c", 70 * kMs, 80 * kMs, true)
                            .check();
  EXPECT_EQ(repeated.section_overlaps.size(), 2u) << repeated.summary();
}

TEST(HistoryChecker, SectionsOnDifferentNamesOrNotValidMayOverlap) {
  EXPECT_TRUE(History()
                  .section(1, "a", 0, 10 * kMs, true)
                  .section(2, "b", 5 * kMs, 20 * kMs, true)
                  .check()
                  .clean());
  // The library said the lease was lost during pid 1's section: it is not claimed as exclusive.
  EXPECT_TRUE(History()
                  .section(1, "a", 0, 10 * kMs, false)
                  .section(2, "a", 5 * kMs, 20 * kMs, true)
                  .check()
                  .clean());
}

TEST(HistoryChecker, ReadersMayOverlapReadersButNotAWriter) {
  EXPECT_TRUE(History()
                  .section(1, "a", 0, 10 * kMs, true, 'r')
                  .section(2, "a", 5 * kMs, 20 * kMs, true, 'r')
                  .section(3, "a", 20 * kMs, 30 * kMs, true, 'w')
                  .check()
                  .clean());
  const auto read_then_write = History()
                                   .section(1, "a", 0, 10 * kMs, true, 'r')
                                   .section(2, "a", 9 * kMs, 20 * kMs, true, 'w')
                                   .check();
  EXPECT_EQ(read_then_write.section_overlaps.size(), 1u) << read_then_write.summary();
  const auto write_then_read = History()
                                   .section(1, "a", 0, 10 * kMs, true, 'w')
                                   .section(2, "a", 9 * kMs, 20 * kMs, true, 'r')
                                   .check();
  EXPECT_EQ(write_then_read.section_overlaps.size(), 1u) << write_then_read.summary();
  // A writer overlapped by a reader that began after a long reader: still caught.
  const auto behind_reader = History()
                                 .section(1, "a", 0, 100 * kMs, true, 'r')
                                 .section(2, "a", 10 * kMs, 20 * kMs, true, 'w')
                                 .check();
  EXPECT_EQ(behind_reader.section_overlaps.size(), 1u) << behind_reader.summary();
}

TEST(HistoryChecker, ReadersThatSharedAreCountedAndReadersInTurnAreNot) {
  const auto in_turn = History()
                           .section(1, "a", 0, 10 * kMs, true, 'r')
                           .section(2, "a", 10 * kMs, 20 * kMs, true, 'r')
                           .section(3, "b", 5 * kMs, 15 * kMs, true, 'r')
                           .check();
  EXPECT_TRUE(in_turn.clean()) << in_turn.summary();
  EXPECT_EQ(in_turn.reader_overlaps, 0u);
  // Pid 2 and pid 3 each began while pid 1 still read; pid 4 read while the name was free.
  const auto shared = History()
                          .section(1, "a", 0, 10 * kMs, true, 'r')
                          .section(2, "a", 10 * kMs - 1, 20 * kMs, true, 'r')
                          .section(3, "a", 5 * kMs, 6 * kMs, true, 'r')
                          .section(4, "a", 30 * kMs, 40 * kMs, true, 'r')
                          .check();
  EXPECT_TRUE(shared.clean()) << shared.summary();
  EXPECT_EQ(shared.reader_overlaps, 2u) << shared.summary();
  // A reader overlapping a section the library did not call valid did not share a valid lease.
  const auto one_invalid = History()
                               .section(1, "a", 0, 10 * kMs, false, 'r')
                               .section(2, "a", 5 * kMs, 20 * kMs, true, 'r')
                               .check();
  EXPECT_EQ(one_invalid.reader_overlaps, 0u) << one_invalid.summary();
}

TEST(HistoryChecker, ACounterThatChangedDuringAValidReaderSectionIsCaught) {
  const auto steady = History()
                          .section(1, "a", 0, 10 * kMs, true, 'r')
                          .counter_check(1, "a", 9 * kMs, 7, 7)
                          .check();
  EXPECT_TRUE(steady.clean()) << steady.summary();
  EXPECT_EQ(steady.counter_checks, 1u);
  const auto changed = History()
                           .section(1, "a", 0, 10 * kMs, true, 'r')
                           .counter_check(1, "a", 9 * kMs, 7, 8)
                           .check();
  ASSERT_EQ(changed.counter_errors.size(), 1u) << changed.summary();
  EXPECT_EQ(changed.counter_errors[0].first.pid, 1);
  // The library said the lease was lost during the section: a change proves nothing.
  const auto lost = History()
                        .section(1, "a", 0, 10 * kMs, false, 'r')
                        .counter_check(1, "a", 9 * kMs, 7, 8)
                        .check();
  EXPECT_TRUE(lost.clean()) << lost.summary();
  EXPECT_EQ(lost.counter_checks, 0u);
}

// --- Leases ------------------------------------------------------------------------------------

TEST(HistoryChecker, AGrantAtTheDeadlineOfThePreviousOneIsNoDoubleGrant) {
  const auto report =
      History().grant(1, 1, "a", 0, 100 * kMs).grant(2, 1, "a", 100 * kMs, 200 * kMs).check();
  EXPECT_TRUE(report.clean()) << report.summary();
  const auto overlapping =
      History().grant(1, 1, "a", 0, 100 * kMs + 1).grant(2, 1, "a", 100 * kMs, 200 * kMs).check();
  EXPECT_EQ(overlapping.double_grants.size(), 1u) << overlapping.summary();
}

TEST(HistoryChecker, AReleaseEndsTheLeaseBeforeItsDeadline) {
  EXPECT_TRUE(History()
                  .grant(1, 1, "a", 0, 100 * kMs)
                  .release(1, 1, "a", 10 * kMs)
                  .grant(2, 1, "a", 10 * kMs, 110 * kMs)
                  .check()
                  .clean());
  const auto too_early = History()
                             .grant(1, 1, "a", 0, 100 * kMs)
                             .release(1, 1, "a", 10 * kMs)
                             .grant(2, 1, "a", 10 * kMs - 1, 110 * kMs)
                             .check();
  EXPECT_EQ(too_early.double_grants.size(), 1u) << too_early.summary();
}

TEST(HistoryChecker, AnExtensionCarriesTheLeaseToItsNewDeadline) {
  History extended;
  extended.grant(1, 1, "a", 0, 100 * kMs).extend(1, 1, "a", 40 * kMs, 140 * kMs);
  EXPECT_TRUE(History(extended).grant(2, 1, "a", 140 * kMs, 240 * kMs).check().clean());
  const auto report = History(extended).grant(2, 1, "a", 120 * kMs, 220 * kMs).check();
  EXPECT_EQ(report.double_grants.size(), 1u) << report.summary();
}

TEST(HistoryChecker, ALateDeliveredExtensionLeavesAGapThatIsNotCovered) {
  // The extension was sent before the deadline (100) and its answer came at 150, after it: from
  // 100 to 150 the holder had no proof of holding.
  History late;
  late.grant(1, 1, "a", 0, 100 * kMs).extend(1, 1, "a", 150 * kMs, 190 * kMs);
  // A section of the holder in the gap, claimed valid: a false "held".
  const auto in_gap = History(late).section(1, "a", 90 * kMs, 160 * kMs, true, 'w', 1).check();
  ASSERT_EQ(in_gap.false_held.size(), 1u) << in_gap.summary();
  // Sections inside either piece are fine.
  EXPECT_TRUE(History(late)
                  .section(1, "a", 10 * kMs, 90 * kMs, true, 'w', 1)
                  .section(1, "a", 150 * kMs, 180 * kMs, true, 'w', 1)
                  .check()
                  .clean());
  // Another grant in the gap is no double grant with the first piece...
  EXPECT_TRUE(History(late).grant(2, 1, "a", 100 * kMs, 150 * kMs).check().clean());
  // ...but one that reaches into the late extension's piece is.
  const auto reaching = History(late).grant(2, 1, "a", 110 * kMs, 151 * kMs).check();
  EXPECT_EQ(reaching.double_grants.size(), 1u) << reaching.summary();
  // Merging the pieces (as if the lease had been continuous) would have hidden this one.
  const auto merged = History(late).section(1, "a", 120 * kMs, 130 * kMs, true, 'w', 1).check();
  EXPECT_EQ(merged.false_held.size(), 1u) << merged.summary();
}

TEST(HistoryChecker, AGrantReportedAtOrAfterItsOwnDeadlineIsCaught) {
  EXPECT_TRUE(History().grant(1, 1, "a", 100 * kMs - 1, 100 * kMs).check().clean());
  const auto report = History().grant(1, 1, "a", 100 * kMs, 100 * kMs).check();
  EXPECT_EQ(report.late_grants.size(), 1u) << report.summary();
  const auto extension =
      History().grant(1, 1, "a", 0, 100 * kMs).extend(1, 1, "a", 300 * kMs, 250 * kMs).check();
  EXPECT_EQ(extension.late_grants.size(), 1u) << extension.summary();
}

TEST(HistoryChecker, ReaderLeasesMayOverlapButNotAWriterLease) {
  EXPECT_TRUE(History()
                  .grant(1, 1, "a", 0, 100 * kMs, 'r')
                  .grant(2, 1, "a", 50 * kMs, 150 * kMs, 'r')
                  .check()
                  .clean());
  const auto report = History()
                          .grant(1, 1, "a", 0, 100 * kMs, 'r')
                          .grant(2, 1, "a", 50 * kMs, 150 * kMs, 'w')
                          .check();
  EXPECT_EQ(report.double_grants.size(), 1u) << report.summary();
}

// A semaphore's grants (mode 'p') carry the name's permits.
Event permit_grant(int pid, std::uint64_t lease, const std::string& name, std::int64_t t,
                   std::int64_t deadline, std::int64_t permits) {
  return {.t = t,
          .pid = pid,
          .kind = EventKind::acquire_ok,
          .name = name,
          .lease = lease,
          .mode = 'p',
          .deadline = deadline,
          .value = permits};
}

TEST(HistoryChecker, PermitLeasesMayOverlapUpToThePermitsButNoMore) {
  History three;
  for (int pid = 1; pid <= 3; ++pid)
    three.event(permit_grant(pid, 1, "s", pid * kMs, 100 * kMs, 3));
  EXPECT_TRUE(three.check().clean()) << three.check().summary();
  // A fourth while the three live is one too many; one that starts as the first ends is not.
  auto four = three;
  four.event(permit_grant(4, 1, "s", 50 * kMs, 150 * kMs, 3));
  const auto report = four.check();
  ASSERT_EQ(report.double_grants.size(), 1u) << report.summary();
  EXPECT_EQ(report.double_grants[0].second.pid, 4);
  auto touching = three;
  touching.release(1, 1, "s", 40 * kMs).event(permit_grant(4, 1, "s", 40 * kMs, 150 * kMs, 3));
  EXPECT_TRUE(touching.check().clean()) << touching.check().summary();
}

TEST(HistoryChecker, PermitSectionsBeyondThePermitsAreCaughtAndThePeakCounted) {
  History two;
  two.event(permit_grant(1, 1, "s", 0, 1000 * kMs, 2))
      .event(permit_grant(2, 1, "s", 0, 1000 * kMs, 2))
      .event(permit_grant(3, 1, "s", 0, 1000 * kMs, 2))
      .section(1, "s", 10 * kMs, 50 * kMs, true, 'p', 1)
      .section(2, "s", 20 * kMs, 60 * kMs, true, 'p', 1)
      .section(3, "s", 60 * kMs, 90 * kMs, true, 'p', 1);
  // Three grants live at once on two permits: a double grant, but the sections kept to two.
  auto report = two.check();
  EXPECT_EQ(report.double_grants.size(), 1u) << report.summary();
  EXPECT_TRUE(report.section_overlaps.empty()) << report.summary();
  EXPECT_EQ(report.permit_peak, 2u);
  two.section(3, "s", 30 * kMs, 40 * kMs, true, 'p', 1);
  report = two.check();
  ASSERT_EQ(report.section_overlaps.size(), 1u) << report.summary();
  EXPECT_EQ(report.permit_peak, 3u);
}

TEST(HistoryChecker, AnOccupancyAboveThePermitsInAValidSectionIsCaught) {
  const auto occupancy = [](int pid, std::int64_t t, std::int64_t count) {
    return Event{.t = t,
                 .pid = pid,
                 .tid = pid,
                 .kind = EventKind::occupancy,
                 .name = "s",
                 .mode = 'p',
                 .value = count};
  };
  History fine;
  fine.event(permit_grant(1, 1, "s", 0, 100 * kMs, 2))
      .section(1, "s", 10 * kMs, 50 * kMs, true, 'p', 1)
      .event(occupancy(1, 20 * kMs, 2));
  EXPECT_TRUE(fine.check().clean()) << fine.check().summary();
  EXPECT_EQ(fine.check().occupancy_checks, 1u);
  History crowded;
  crowded.event(permit_grant(1, 1, "s", 0, 100 * kMs, 2))
      .section(1, "s", 10 * kMs, 50 * kMs, true, 'p', 1)
      .event(occupancy(1, 20 * kMs, 3));
  EXPECT_EQ(crowded.check().counter_errors.size(), 1u) << crowded.check().summary();
  // Outside a valid section the count proves nothing.
  History lost;
  lost.event(permit_grant(1, 1, "s", 0, 100 * kMs, 2))
      .section(1, "s", 10 * kMs, 50 * kMs, false, 'p', 1)
      .event(occupancy(1, 20 * kMs, 3));
  EXPECT_TRUE(lost.check().clean()) << lost.check().summary();
}

TEST(HistoryChecker, AValidSectionPastItsLeaseDeadlineIsAFalseHeld) {
  History granted;
  granted.grant(1, 1, "a", 0, 100 * kMs);
  EXPECT_TRUE(History(granted).section(1, "a", 1 * kMs, 100 * kMs, true, 'w', 1).check().clean());
  const auto past = History(granted).section(1, "a", 1 * kMs, 100 * kMs + 1, true, 'w', 1).check();
  EXPECT_EQ(past.false_held.size(), 1u) << past.summary();
  // Reported lost in time: not a claim.
  EXPECT_TRUE(History(granted).section(1, "a", 1 * kMs, 300 * kMs, false, 'w', 1).check().clean());
  // A lease the history never saw granted.
  const auto unknown = History().section(1, "a", 1 * kMs, 2 * kMs, true, 'w', 7).check();
  EXPECT_EQ(unknown.false_held.size(), 1u) << unknown.summary();
}

// --- Fences ------------------------------------------------------------------------------------

TEST(HistoryChecker, FencesAcceptedInIncreasingOrderPass) {
  const auto report = History()
                          .fence(1, "a", 0, 1 * kMs, 5, true)
                          .fence(2, "a", 2 * kMs, 3 * kMs, 6, true)
                          .fence(1, "a", 4 * kMs, 5 * kMs, 6, false)  // stale: refused
                          .fence(2, "a", 6 * kMs, 7 * kMs, 9, true)
                          .check();
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_EQ(report.fences_accepted, 3u);
  EXPECT_EQ(report.fences_rejected, 1u);
}

TEST(HistoryChecker, FencesAcceptedOutOfOrderAreCaught) {
  const auto lower =
      History().fence(1, "a", 0, 1 * kMs, 7, true).fence(2, "a", 2 * kMs, 3 * kMs, 6, true).check();
  ASSERT_EQ(lower.fence_order.size(), 1u) << lower.summary();
  EXPECT_EQ(lower.fence_order[0].second.pid, 2);
  const auto equal =
      History().fence(1, "a", 0, 1 * kMs, 7, true).fence(2, "a", 2 * kMs, 3 * kMs, 7, true).check();
  EXPECT_EQ(equal.fence_order.size(), 1u) << equal.summary();
}

TEST(HistoryChecker, ConcurrentFencedWritesMayHaveBeenAppliedInEitherOrder) {
  // Sent at 0 and answered at 10, sent at 2 and answered at 3: the resource may have applied 6
  // before 7.
  EXPECT_TRUE(History()
                  .fence(1, "a", 0, 10 * kMs, 7, true)
                  .fence(2, "a", 2 * kMs, 3 * kMs, 6, true)
                  .check()
                  .clean());
  // On another name, order does not matter.
  EXPECT_TRUE(History()
                  .fence(1, "a", 0, 1 * kMs, 7, true)
                  .fence(2, "b", 2 * kMs, 3 * kMs, 6, true)
                  .check()
                  .clean());
}

TEST(HistoryChecker, GrantsAskedForAfterAFencedGrantCarryALargerFence) {
  // Granted one after the other: 7 then 8 passes; 7 then 7 (a counter that went back, as after
  // a failover that lost its increment) or 7 then 3 is caught.
  const auto increasing = History()
                              .fenced_grant(1, 1, "a", 0, 1 * kMs, 100 * kMs, 7)
                              .fenced_grant(2, 1, "a", 200 * kMs, 201 * kMs, 300 * kMs, 8)
                              .check();
  EXPECT_TRUE(increasing.clean()) << increasing.summary();
  EXPECT_EQ(increasing.fenced_grants, 2u);
  for (const std::int64_t again : {7, 3}) {
    const auto back = History()
                          .fenced_grant(1, 1, "a", 0, 1 * kMs, 100 * kMs, 7)
                          .fenced_grant(2, 1, "a", 200 * kMs, 201 * kMs, 300 * kMs, again)
                          .check();
    ASSERT_EQ(back.fence_order.size(), 1u) << back.summary();
    EXPECT_EQ(back.fence_order[0].second.pid, 2);
  }
  // Asked for before the first was answered: either may have been granted first.
  EXPECT_TRUE(History()
                  .fenced_grant(1, 1, "a", 0, 5 * kMs, 100 * kMs, 7)
                  .fenced_grant(2, 1, "a", 2 * kMs, 3 * kMs, 300 * kMs, 6)
                  .check()
                  .fence_order.empty());
}

// --- Counters ----------------------------------------------------------------------------------

TEST(HistoryChecker, ALostCounterUpdateIsCaught) {
  History exact;
  exact.counter(1, "a", 1 * kMs, 0, 1).counter(2, "a", 2 * kMs, 1, 2);
  EXPECT_TRUE(exact.check().clean());
  EXPECT_TRUE(check_counter_final(exact.events(), "a", 2).empty());
  EXPECT_EQ(check_counter_final(exact.events(), "a", 1).size(), 1u);
  EXPECT_EQ(check_counter_final(exact.events(), "a", 3).size(), 1u);

  History lost;
  lost.counter(1, "a", 1 * kMs, 0, 1).counter(2, "a", 2 * kMs, 0, 1);
  const auto report = lost.check();
  EXPECT_EQ(report.counter_errors.size(), 1u) << report.summary();
  EXPECT_EQ(check_counter_final(lost.events(), "a", 1).size(), 1u);

  const auto skipped = History().counter(1, "a", 1 * kMs, 3, 5).check();
  EXPECT_EQ(skipped.counter_errors.size(), 1u) << skipped.summary();
}

TEST(HistoryChecker, ACounterWriteOfUnknownOutcomeMayOrMayNotHaveLanded) {
  History history;
  history.counter(1, "a", 1 * kMs, 0, 1).counter(1, "a", 2 * kMs, 1, 2, false);
  EXPECT_TRUE(check_counter_final(history.events(), "a", 1).empty());
  EXPECT_TRUE(check_counter_final(history.events(), "a", 2).empty());
  EXPECT_EQ(check_counter_final(history.events(), "a", 3).size(), 1u);
}

// --- Measurements ------------------------------------------------------------------------------

TEST(HistoryChecker, LossReportsCarryTheEndOfTheLeasesProvenLife) {
  const auto reports = loss_reports(History()
                                        .grant(1, 1, "a", 0, 100 * kMs)
                                        .extend(1, 1, "a", 30 * kMs, 130 * kMs)
                                        .event({.t = 135 * kMs,
                                                .pid = 1,
                                                .kind = EventKind::loss,
                                                .name = "a",
                                                .lease = 1,
                                                .detail = "expired"})
                                        .events());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].deadline, 130 * kMs);
  EXPECT_EQ(reports[0].t - reports[0].deadline, 5 * kMs);
  EXPECT_EQ(reports[0].cause, "expired");
}

TEST(HistoryChecker, TakeoversFollowKilledHoldersOnly) {
  const auto kill = [](std::int64_t t, int target) {
    return Event{
        .t = t, .pid = 99, .kind = EventKind::fault, .target = target, .detail = "sigkill"};
  };
  History history;
  history.grant(1, 1, "held", 0, 100 * kMs)
      .grant(1, 2, "released", 0, 100 * kMs)
      .event(
          {.t = 5 * kMs, .pid = 1, .kind = EventKind::release_ok, .name = "released", .lease = 2})
      .event(
          {.t = 6 * kMs, .pid = 1, .kind = EventKind::acquire_call, .name = "asking", .lease = 3})
      .event(kill(10 * kMs, 1))
      .grant(2, 1, "held", 101 * kMs, 200 * kMs)
      .grant(2, 2, "released", 11 * kMs, 200 * kMs);
  const auto found = takeovers(history.events());
  ASSERT_EQ(found.size(), 2u);  // "asking" (its acquire may have landed) and "held"
  EXPECT_EQ(found[0].name, "asking");
  EXPECT_FALSE(found[0].next_grant.has_value());
  EXPECT_EQ(found[1].name, "held");
  ASSERT_TRUE(found[1].next_grant.has_value());
  EXPECT_EQ(*found[1].next_grant - found[1].death, 91 * kMs);
}

TEST(HistoryChecker, StatsGiveTheMedianAndTheMaximumInMilliseconds) {
  const auto stats = stats_ms({3 * kMs, 1 * kMs, 2 * kMs, 10 * kMs});
  EXPECT_EQ(stats.count, 4u);
  EXPECT_DOUBLE_EQ(stats.p50_ms, 2.0);
  EXPECT_DOUBLE_EQ(stats.max_ms, 10.0);
  EXPECT_EQ(stats_ms({}).count, 0u);
}

}  // namespace
}  // namespace leasehold::testing
