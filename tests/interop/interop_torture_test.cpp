// Mixed torture on one key: three leasehold workers (threads of this process: two RawLock waiters
// and a Locker(raw_keys) with_lock), three redis-py workers and three node-redlock workers (child
// processes) each take the key, hold it briefly and release it, a number of times, recording
// their critical sections with CLOCK_MONOTONIC times (history.hpp). The history checker then
// finds no two sections, and no two provably live leases, at once; every worker got in, and the
// key passed between clients of different kinds many times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "driver_process.hpp"
#include "history.hpp"
#include "history_checker.hpp"
#include "leasehold/leasehold.hpp"
#include "other_client.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using interop::Deadline;
using interop::DriverProcess;
using interop::OtherClient;
using testing::Event;
using testing::EventKind;
using testing::monotonic_ns;
using testing::Recorder;

constexpr int kWorkersPerKind = 3;
constexpr int kCycles = 20;
constexpr auto kHold = 2ms;
// Long enough that no lease runs out under a sanitizer on a loaded machine: the test is about
// exclusion, not expiry.
constexpr auto kTtl = 10s;
// Each kind's attempts at a busy key come this often (the others pause 1-8 ms at random).
constexpr auto kPoll = 5ms;
// Generous: the workers are done in a few seconds on an idle machine.
constexpr auto kWorkersDone = 120s;

// A leasehold deadline (Clock: CLOCK_BOOTTIME) on the history's CLOCK_MONOTONIC scale, mapped a
// little early, never late.
std::int64_t monotonic_deadline(Clock::time_point deadline) {
  const std::int64_t monotonic_before = monotonic_ns();
  const auto left = deadline - Clock::now();
  return monotonic_before + std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
}

class InteropTorture : public testing::SharedServerTest {
 protected:
  // One critical section of a leasehold worker holding `token`, recorded as lease `lease`.
  void section(const Recorder& recorder, std::uint64_t lease, const LockToken<RawLock>& token) {
    const std::int64_t deadline = monotonic_deadline(token.deadline());
    recorder.record(
        {.kind = EventKind::acquire_ok, .name = key_, .lease = lease, .deadline = deadline});
    recorder.record({.kind = EventKind::cs_begin, .name = key_, .lease = lease});
    std::this_thread::sleep_for(kHold);  // the work under the lock
    const std::int64_t end = monotonic_ns();
    recorder.record({.t = end,
                     .kind = EventKind::cs_end,
                     .name = key_,
                     .lease = lease,
                     .valid = end < deadline});
    recorder.record({.kind = EventKind::release_call, .name = key_, .lease = lease});
    const bool released = redis_.process(token.release());
    recorder.record({.kind = released ? EventKind::release_ok : EventKind::release_fail,
                     .name = key_,
                     .lease = lease});
    if (!released)
      throw std::runtime_error("a leasehold worker found its lease gone at its release");
  }

  // Two kinds of leasehold worker: lock_for() on a RawLock, polling; and with_lock() of a
  // Locker with raw keys, whose section knows no token (lease 0; valid: not stopped).
  void raw_lock_worker(Recorder& recorder, Deadline end) {
    const RawLock lock{kTtl};
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      const auto lease = recorder.next_lease();
      recorder.record({.kind = EventKind::acquire_call, .name = key_, .lease = lease});
      auto token = lock_until(redis_, lock, key_, Clock::now() + (end - Deadline::clock::now()),
                              WaitOptions{.poll = kPoll});
      if (!token)
        throw std::runtime_error("a RawLock waiter did not get the key in time");
      section(recorder, lease, *token);
    }
  }
  void locker_worker(const Recorder& recorder, Deadline end) {
    Locker locker(redis_, raw_keys);
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - Deadline::clock::now());
      locker.with_lock(
          key_,
          [&](std::stop_token stop) {
            recorder.record({.kind = EventKind::cs_begin, .name = key_});
            std::this_thread::sleep_for(kHold);  // the work under the lock
            recorder.record(
                {.kind = EventKind::cs_end, .name = key_, .valid = !stop.stop_requested()});
          },
          {.ttl = kTtl,
           .retry_attempts = static_cast<int>(left / kPoll) + 1,
           .retry_delay = kPoll});
    }
  }

  std::string key_ = "interop-torture" + std::to_string(unique_number()) + ":invoice:42";
  Client redis_{server_->unix_url()};
};

TEST_F(InteropTorture, MixedClientsExcludeEachOtherOnOneKey) {
  const auto started = std::chrono::steady_clock::now();
  interop::TempDir dir("interop-torture");
  const std::string events = dir.path() + "/events";
  std::filesystem::create_directory(events);

  // The other clients' workers, started first (an interpreter takes a while), each waiting for
  // "go" once it is connected.
  std::vector<DriverProcess> children;
  std::map<int, std::string> kind_of;  // pid -> the client it runs
  for (const auto& kind : {interop::redis_py_client(), interop::redlock_client()}) {
    const OtherClient client(kind, server_->tcp_url(), dir.path());
    try {
      client.check();
    } catch (const std::exception& error) {
      FAIL() << kind.name << " cannot run: " << error.what();
    }
    for (int i = 0; i < kWorkersPerKind; ++i) {
      const std::string name = kind.name + "-" + std::to_string(i);
      children.push_back(client.worker(key_, kTtl, kCycles, kHold, events + "/" + name + ".events",
                                       dir.path() + "/" + name + ".stderr"));
      kind_of[children.back().pid()] = kind.name;
    }
  }
  const Deadline ready_by = std::chrono::steady_clock::now() + 60s;
  for (auto& child : children)
    ASSERT_EQ(child.read_line(ready_by), "ready")
        << child.program() << " " << child.pid() << ": " << child.stderr_text();

  Recorder recorder(events + "/leasehold.events");
  kind_of[::getpid()] = "leasehold";
  const Deadline end = std::chrono::steady_clock::now() + kWorkersDone;
  for (auto& child : children) {
    ASSERT_TRUE(child.write_line("go"));
    child.close_stdin();
  }
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkersPerKind; ++i) {
    threads.emplace_back([&, i] {
      try {
        if (i == 0)
          locker_worker(recorder, end);
        else
          raw_lock_worker(recorder, end);
      } catch (const std::exception& error) {
        const std::lock_guard lock(failures_mutex);
        failures.push_back("leasehold worker " + std::to_string(i) + ": " + error.what());
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(failures, std::vector<std::string>{});
  for (auto& child : children) {
    EXPECT_EQ(child.read_line(end), "done " + std::to_string(kCycles))
        << kind_of[child.pid()] << " worker " << child.pid() << ": " << child.stderr_text();
    EXPECT_EQ(child.wait(end), 0) << child.stderr_text();
  }
  EXPECT_EQ(server_->command({"EXISTS", key_}).integer, 0) << "every lock released";

  const auto history = testing::read_history(events);
  const auto report = testing::check_history(history);
  EXPECT_TRUE(report.clean()) << report.summary();

  // Every worker's sections, valid throughout, and how often the key changed hands between
  // clients of different kinds.
  std::map<std::pair<int, int>, int> valid_sections;  // (pid, tid) -> count
  std::vector<std::pair<std::int64_t, std::string>> entries;
  for (const auto& event : history) {
    if (event.kind == EventKind::cs_end && event.valid)
      ++valid_sections[{event.pid, event.tid}];
    if (event.kind == EventKind::cs_begin)
      entries.emplace_back(event.t, kind_of.count(event.pid) ? kind_of[event.pid] : "unknown");
  }
  EXPECT_EQ(valid_sections.size(), 3u * kWorkersPerKind) << "every worker got in";
  for (const auto& [worker, count] : valid_sections)
    EXPECT_EQ(count, kCycles) << "pid " << worker.first << " tid " << worker.second << " ("
                              << kind_of[worker.first] << ")";
  EXPECT_EQ(report.valid_sections, static_cast<std::size_t>(3 * kWorkersPerKind * kCycles));
  std::sort(entries.begin(), entries.end());
  int handovers = 0;
  std::set<std::pair<std::string, std::string>> directions;
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].second != entries[i - 1].second) {
      ++handovers;
      directions.emplace(entries[i - 1].second, entries[i].second);
    }
  }
  EXPECT_GE(handovers, 10) << "the clients really took turns on the key";
  EXPECT_GE(directions.size(), 4u) << "in several directions";
  std::cout << "interop torture: " << report.valid_sections << " sections, " << handovers
            << " handovers between clients, " << directions.size() << " directions, in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count()
            << " ms\n";
}

}  // namespace
}  // namespace leasehold
