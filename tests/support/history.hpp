// A history of what lease holders did, for checking safety after the fact.
//
// Every worker process appends events to a file of its own (one line per event, each written with
// a single write(2) on an O_APPEND descriptor, so lines from the threads of one process never
// interleave and a SIGKILL loses at most the events not yet written). Times are CLOCK_MONOTONIC
// nanoseconds: every process runs on one machine, so they are comparable across processes. The
// checker (history_checker.hpp) reads every file of a directory and verifies the history.
//
//   Recorder recorder(dir + "/worker-" + std::to_string(getpid()) + ".events");
//   const auto lease = recorder.next_lease();
//   recorder.record({.kind = EventKind::acquire_call, .name = "invoice-7", .lease = lease});
//
// A line is "key=value" fields separated by spaces, e.g.
//   t=81234567 pid=412 tid=415 kind=acquire_ok name=invoice-7 lease=3 deadline=81534567
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::testing {

enum class EventKind {
  acquire_call,     // an acquire is about to be sent (lease: a new number)
  acquire_ok,       // granted; deadline: until when the holder may act; mode: w, r or p (a
                    // semaphore's permit, with value: how many permits the name has); a w or r
                    // grant with a fencing number: value, and start (when it was asked for)
  acquire_fail,     // not granted (busy)
  acquire_unknown,  // the acquire failed with an error: it may or may not have been granted
  extend_ok,        // the lease now runs until `deadline` (as seen at `t`)
  extend_fail,      // the extension answered "not held"
  extend_unknown,   // the extension failed with an error
  release_call,     // a release is about to be sent: from here on the holder does not act
  release_ok,
  release_fail,  // the lease had run out
  release_unknown,
  cs_begin,       // a critical section starts (mode w or r)
  cs_end,         // it ends; valid: the library said the lease was valid for all of it
  loss,           // the library reported the lease lost, at `t`; detail: the cause
  fence,          // a fenced write: value, ok (accepted), start (when it was sent), t (its answer);
                  // detail "unknown": it failed with an error
  counter,        // a counter write: read, value (written), ok (confirmed; 0: outcome unknown)
  counter_check,  // a section read a counter it does not write twice: read (first), value (second)
  occupancy,      // a permit holder's section counted itself in at Redis: value, how many were in
  fault,          // a fault injected by a test: detail says which, target the process it hit
};

std::string_view to_string(EventKind kind);
std::optional<EventKind> event_kind_from_string(std::string_view text);

struct Event {
  std::int64_t t = 0;  // CLOCK_MONOTONIC ns; the recorder fills it in when 0
  int pid = 0;         // filled in by the recorder
  int tid = 0;         // filled in by the recorder
  EventKind kind = EventKind::fault;
  std::string name{};         // the lock's name (no spaces); empty when none
  std::uint64_t lease = 0;    // the lease's number within its process; 0: not known
  char mode = 'w';            // 'w' exclusive (or writer), 'r' reader, 'p' a semaphore's permit
  std::int64_t deadline = 0;  // CLOCK_MONOTONIC ns
  bool valid = false;         // cs_end
  std::int64_t value = 0;     // fence: the fence value; counter: the value written;
                              // counter_check: the second read; occupancy: the count;
                              // acquire_ok of a permit: the name's permits, of
                              // another lease: its fencing number
  std::int64_t read = 0;      // counter: the value read; counter_check: the first read
  bool ok = false;            // fence: accepted; counter: confirmed
  std::int64_t start = 0;     // fence, counter: when the write was sent; acquire_ok: when the
                              // acquire was (CLOCK_MONOTONIC ns)
  int target = 0;             // fault: the process it hit
  std::string detail{};       // no spaces

  std::string to_line() const;  // one line, with its '\n'
};

// Nothing if the line is not an event (a torn or foreign line).
std::optional<Event> parse_event(std::string_view line);

// CLOCK_MONOTONIC, in nanoseconds.
std::int64_t monotonic_ns();
// A steady_clock time point (a lease deadline) on the CLOCK_MONOTONIC scale. On Linux, libstdc++'s
// steady_clock is CLOCK_MONOTONIC; history_checker_test checks that the two agree.
std::int64_t to_monotonic_ns(std::chrono::steady_clock::time_point time);

class Recorder {
 public:
  // Appends to `path` (created if missing). Throws std::runtime_error if it cannot be opened.
  explicit Recorder(const std::string& path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Fills in t (if 0), pid and tid, and appends the event with one write(2). Thread-safe. Aborts
  // if the write fails: a history with holes would make the checker lie.
  void record(Event event) const;
  // A lease number unique in this process (from 1).
  std::uint64_t next_lease() { return ++next_lease_; }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::atomic<std::uint64_t> next_lease_{0};
};

// The events of one file, in file order; a torn last line is left out.
std::vector<Event> read_history_file(const std::string& path);
// Every event of every "*.events" file in `dir`, ordered by time (events of one file with equal
// times keep their file order).
std::vector<Event> read_history(const std::string& dir);

}  // namespace leasehold::testing
