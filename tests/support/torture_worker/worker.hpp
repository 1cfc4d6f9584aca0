// What the torture worker's modes share (main.cpp says what each mode does): their options, the
// mapping of lease deadlines onto the history's clock, the fenced resource's script, the
// read-increment-write counter, and the watch that records extensions.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <leasehold/leasehold.hpp>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "history.hpp"

namespace leasehold::testing::torture_worker {

using namespace std::chrono_literals;

// A lease deadline (leasehold::Clock, CLOCK_BOOTTIME) on the history's CLOCK_MONOTONIC scale. The
// two clocks differ by the time the host was suspended, which does not change while a scenario
// runs: the offset is read once, the monotonic reading bracketed by two boot readings (again if
// this process was stopped or preempted in between), so that every deadline maps the same way.
std::int64_t to_monotonic_ns(leasehold::Clock::time_point deadline);

// The fenced resource: a Redis key "<prefix>:fence:<name>" holding the highest fence accepted so
// far; it accepts a write only if its fence is higher.
inline constexpr std::string_view kFenceScript = R"(
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0)";

struct Options {
  std::map<std::string, std::string> values;

  std::string text(const std::string& key, std::string fallback = {}) const {
    const auto at = values.find(key);
    return at == values.end() ? fallback : at->second;
  }
  long long number(const std::string& key, long long fallback) const {
    const auto at = values.find(key);
    return at == values.end() ? fallback : std::stoll(at->second);
  }
  bool flag(const std::string& key) const { return values.count(key) != 0; }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    std::stringstream list(text("names", "a"));
    for (std::string name; std::getline(list, name, ',');)
      names.push_back(name);
    return names;
  }
};

// --option value pairs after the mode (a bare --flag is "1").
Options parse_options(int argc, char** argv);

// An error as one word for the history's detail field.
std::string as_word(const std::string& text);

// An extension's or a loss's cause as one word ("expired_or_taken_over" without one).
std::string cause_word(std::error_code cause);

// Records the loss of lease `lease` (0: not known) on `name`, of `mode` as Event has it, for
// `cause`: at `lost_at`, when the work's stop was requested (0: never seen), or now.
void record_loss(const Recorder& recorder, std::int64_t lost_at, const std::string& name,
                 std::uint64_t lease, char mode, std::error_code cause);

inline std::chrono::milliseconds ms(long long count) {
  return std::chrono::milliseconds(count);
}

// Sleeps until `until` in short steps, calling step() after each; stops early when step() says so.
template <class Step>
void hold_until(std::int64_t until_ns, Step step) {
  for (;;) {
    const std::int64_t now = monotonic_ns();
    if (now >= until_ns || !step())
      return;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        2ms, std::chrono::nanoseconds(until_ns - now)));  // the section's work
  }
}

// The counter "<prefix>:counter:<name>"; 0 if it does not exist.
long long read_counter(leasehold::Client& redis, const std::string& key);

// Records each extension (extend_ok) of a watched lease as its reply reaches the client: the
// client tells its observer on its I/O thread right after the lease's deadline moved. A section
// that looks for extensions itself sees one up to its next look later (every 2 ms, later still
// when it is starved); an extension answered just before the old deadline would then show a gap
// before it that the lease never had. Set as the client's observer (ClientOptions::observer).
class ExtensionObserver final : public leasehold::Observer {
 public:
  struct Lease {
    std::string name;
    std::uint64_t number = 0;
    char mode = 'w';
    std::function<leasehold::Clock::time_point()> deadline;
  };

  explicit ExtensionObserver(const Recorder& recorder) : recorder_(recorder) {}

  void watch(const std::string& key, Lease lease) {
    const std::lock_guard lock(mutex_);
    watched_[key] = std::move(lease);
  }
  void unwatch(const std::string& key) {
    const std::lock_guard lock(mutex_);
    watched_.erase(key);
  }

  void on_extension(const leasehold::ExtensionEvent& event) override {
    if (event.outcome != leasehold::ExtensionEvent::Outcome::extended)
      return;
    const std::lock_guard lock(mutex_);
    const auto lease = watched_.find(std::string(event.key));
    if (lease == watched_.end())
      return;
    recorder_.record({.kind = EventKind::extend_ok,
                      .name = lease->second.name,
                      .lease = lease->second.number,
                      .mode = lease->second.mode,
                      .deadline = to_monotonic_ns(lease->second.deadline())});
  }

 private:
  const Recorder& recorder_;
  std::mutex mutex_;
  std::map<std::string, Lease> watched_;
};

// Records an extension (extend_ok) each time a held token's deadline has moved on since it last
// looked. Compared on the lease's own clock: the mapping onto the history's differs by
// nanoseconds from one reading to the next, which must not pass for an extension. Given the
// client's ExtensionObserver, it leaves the recording to that instead, for the whole watch.
template <class Token>
class ExtensionWatch {
 public:
  ExtensionWatch(const Recorder& recorder, const Token& token, const std::string& name,
                 std::uint64_t lease, char mode, ExtensionObserver* observer = nullptr)
      : recorder_(recorder),
        token_(token),
        name_(name),
        lease_(lease),
        mode_(mode),
        seen_(token.deadline()),
        observer_(observer) {
    if (observer_ != nullptr)
      observer_->watch(token.key(), {name, lease, mode, [&token] { return token.deadline(); }});
  }
  ~ExtensionWatch() {
    if (observer_ != nullptr)
      observer_->unwatch(token_.key());
  }
  ExtensionWatch(const ExtensionWatch&) = delete;
  ExtensionWatch& operator=(const ExtensionWatch&) = delete;

  void operator()() {
    if (observer_ != nullptr)
      return;
    const leasehold::Clock::time_point deadline = token_.deadline();
    if (deadline <= seen_)
      return;
    seen_ = deadline;
    recorder_.record({.kind = EventKind::extend_ok,
                      .name = name_,
                      .lease = lease_,
                      .mode = mode_,
                      .deadline = to_monotonic_ns(deadline)});
  }

 private:
  const Recorder& recorder_;
  const Token& token_;
  const std::string& name_;
  std::uint64_t lease_;
  char mode_;
  leasehold::Clock::time_point seen_;
  ExtensionObserver* observer_;
};

// The non-atomic half of read-sleep-write: writes read + 1 and records it, confirmed or unknown.
void write_counter(leasehold::Client& redis, const Recorder& recorder, const std::string& name,
                   std::uint64_t lease, const std::string& key, long long read);

// Releases `token`'s lease on `name` and records the call and its outcome (mode: 'w', 'r' or 'p').
template <class Token>
void release_and_record(leasehold::Client& redis, const Recorder& recorder, const Token& token,
                        const std::string& name, std::uint64_t lease, char mode) {
  recorder.record({.kind = EventKind::release_call, .name = name, .lease = lease, .mode = mode});
  try {
    const bool released = redis.process(token.release());
    recorder.record({.kind = released ? EventKind::release_ok : EventKind::release_fail,
                     .name = name,
                     .lease = lease,
                     .mode = mode});
  } catch (const leasehold::Error& e) {
    recorder.record({.kind = EventKind::release_unknown,
                     .name = name,
                     .lease = lease,
                     .mode = mode,
                     .detail = as_word(e.what())});
  }
}

// Runs thread_main(seed, t) on threads t = 0..count-1, each seed its own in this process and
// across processes, and waits for them all.
template <class Main>
void run_threads(int count, Main thread_main) {
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back(thread_main, static_cast<unsigned>(::getpid() * 100 + t), t);
  for (auto& thread : threads)
    thread.join();
}

// The modes, each in a file of its own: what their process returns.
int run_with_lock(const Options& options);
int run_lease(
    const Options& options);  // a Lock's lease, or (--lock rwlock-writer) an RwLock's writer
int run_rwlock(const Options& options);
int run_semaphore(const Options& options);
int run_cron(const Options& options);
int run_elector(const Options& options);

}  // namespace leasehold::testing::torture_worker
