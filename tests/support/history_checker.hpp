// Checks a recorded history (history.hpp) for the safety properties of leases. Pure code: no
// clock, no Redis, no processes; the unit tests feed it synthetic histories.
//
// Per name it verifies:
//  - no double grant: two leases (not both readers) are never *provably live* at once; on a
//    semaphore's name (permit grants, mode 'p'), never more leases than its permits. A lease is
//    provably live from the moment its holder learned of a grant or an extension until the
//    deadline that came with it, and never after its holder called release. An extension that
//    arrives after the previous deadline starts a new piece: the gap in between is not covered.
//  - no overlap of critical sections that the library said were valid throughout (readers may
//    overlap readers; permit sections up to the permits). Sections that touch (one ends at the
//    very nanosecond the next begins) do not overlap. It counts the reader sections that did
//    overlap another reader's, and the most permit sections open at once, to show that readers
//    and permit holders really shared.
//  - no false "held": a valid section of a known lease lies inside one piece of its proven life.
//  - no grant reported at or after its own deadline.
//  - fences: an accepted fenced write whose answer came before another accepted write was sent
//    carries a smaller value (fences accepted only in increasing order); likewise a grant that
//    came with a fencing number (acquire_ok with a value) and the grants asked for after it.
//  - counters: every confirmed write of a read-increment-write counter wrote read + 1, and no two
//    confirmed writes wrote the same value (a lost update); a counter that a valid section read
//    twice (a reader's counter_check) did not change in between (a writer got in); a valid permit
//    section that counted itself in at Redis (occupancy) found no more holders than permits.
// It also measures: loss reports against the lease's proven end, and takeovers after a holder
// was killed (the first grant to anyone else after the kill).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "history.hpp"

namespace leasehold::testing {

// [begin, end) in CLOCK_MONOTONIC ns.
struct Span {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

// One side of a violation: a lease (pid, lease) or a critical section (pid, tid).
struct Party {
  int pid = 0;
  int tid = 0;
  std::uint64_t lease = 0;
  char mode = 'w';
  Span span;  // the piece of the lease's proven life, or the section
};

struct Violation {
  std::string name;
  Party first;
  Party second;  // unused for violations of one party
  std::string what;
};

struct HistoryReport {
  std::size_t leases = 0;          // leases granted
  std::size_t sections = 0;        // critical sections that began and ended
  std::size_t valid_sections = 0;  // ...that the library said were valid throughout
  std::size_t losses = 0;          // loss reports
  std::size_t fences_accepted = 0;
  std::size_t fences_rejected = 0;  // stale writes the resource refused
  std::size_t fenced_grants = 0;    // grants that came with a fencing number
  std::size_t counter_writes = 0;   // confirmed counter writes
  std::size_t counter_checks = 0;   // counter_checks inside valid sections
  // Valid reader sections that began while a valid reader section of another thread on the same
  // name was still open: the readers that shared.
  std::size_t reader_overlaps = 0;
  // The most valid permit sections open at once on one semaphore name: permits really shared.
  std::size_t permit_peak = 0;
  std::size_t occupancy_checks = 0;  // valid permit sections that counted themselves in

  std::vector<Violation> double_grants;
  std::vector<Violation> section_overlaps;
  std::vector<Violation> false_held;
  std::vector<Violation> late_grants;
  std::vector<Violation> fence_order;
  std::vector<Violation> counter_errors;

  bool clean() const {
    return double_grants.empty() && section_overlaps.empty() && false_held.empty() &&
           late_grants.empty() && fence_order.empty() && counter_errors.empty();
  }
  // The counts, then up to `per_kind` violations of each kind, one per line.
  std::string summary(std::size_t per_kind = 5) const;
};

HistoryReport check_history(const std::vector<Event>& events);

// Problems with a counter named `name` whose value is `final_value` at the end: it must lie
// between the number of confirmed writes and that plus the writes of unknown outcome.
std::vector<std::string> check_counter_final(const std::vector<Event>& events,
                                             const std::string& name, long long final_value);

struct LossReport {
  std::string name;
  int pid = 0;
  std::uint64_t lease = 0;
  std::int64_t t = 0;         // when the library reported it
  std::int64_t deadline = 0;  // the end of the lease's proven life; 0 if unknown
  std::string cause;
};
std::vector<LossReport> loss_reports(const std::vector<Event>& events);

// A holder killed (a fault event with detail "sigkill") while it held or may have held `name`
// (its last event on the name was not a definite "not held": a busy acquire or a release that
// answered): when did anyone else get it next?
struct Takeover {
  std::string name;
  int dead_pid = 0;
  std::int64_t death = 0;
  std::optional<std::int64_t> next_grant;  // the first acquire_ok by another process after death
};
std::vector<Takeover> takeovers(const std::vector<Event>& events);

// Latency figures in milliseconds.
struct Stats {
  std::size_t count = 0;
  double p50_ms = 0;
  double max_ms = 0;
};
Stats stats_ms(std::vector<std::int64_t> nanoseconds);

}  // namespace leasehold::testing
