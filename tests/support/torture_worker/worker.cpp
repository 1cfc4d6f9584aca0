#include "worker.hpp"

#include <stdexcept>

namespace leasehold::testing::torture_worker {

// A lease deadline (leasehold::Clock, CLOCK_BOOTTIME) on the history's CLOCK_MONOTONIC scale. The
// two clocks differ by the time the host was suspended, which does not change while a scenario
// runs: the offset is read once, the monotonic reading bracketed by two boot readings (again if
// this process was stopped or preempted in between), so that every deadline maps the same way.
std::int64_t to_monotonic_ns(leasehold::Clock::time_point deadline) {
  static const std::chrono::nanoseconds boot_minus_monotonic = [] {
    for (;;) {
      const auto boot_before = leasehold::Clock::now();
      const auto monotonic_now = std::chrono::steady_clock::now();
      const auto boot_after = leasehold::Clock::now();
      if (boot_after - boot_before <= 100us)
        return boot_after.time_since_epoch() - monotonic_now.time_since_epoch();
    }
  }();
  // Mapped a little early (by at most the bracket), never late.
  return testing::to_monotonic_ns(std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline.time_since_epoch() -
                                                                      boot_minus_monotonic)));
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 2; i < argc; ++i) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0)
      throw std::invalid_argument("unexpected argument " + key);
    key = key.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
      options.values[key] = argv[++i];
    else
      options.values[key] = "1";
  }
  return options;
}

// An error as one word for the history's detail field.
std::string as_word(const std::string& text) {
  std::string word = text.substr(0, 60);
  for (char& c : word)
    if (c == ' ' || c == '\n' || c == '\t' || c == '=')
      c = '_';
  return word.empty() ? "error" : word;
}

std::string cause_word(std::error_code cause) {
  return cause ? as_word(cause.message()) : "expired_or_taken_over";
}

void record_loss(const Recorder& recorder, std::int64_t lost_at, const std::string& name,
                 std::uint64_t lease, char mode, std::error_code cause) {
  recorder.record({.t = lost_at != 0 ? lost_at : monotonic_ns(),
                   .kind = EventKind::loss,
                   .name = name,
                   .lease = lease,
                   .mode = mode,
                   .detail = cause_word(cause)});
}

// The counter "<prefix>:counter:<name>"; 0 if it does not exist.
long long read_counter(leasehold::Client& redis, const std::string& key) {
  const auto value = redis.process(leasehold::Command{"GET", key});
  return value.is_nil() ? 0 : std::stoll(value.str);
}

// The non-atomic half of read-sleep-write: writes read + 1 and records it, confirmed or unknown.
void write_counter(leasehold::Client& redis, const Recorder& recorder, const std::string& name,
                   std::uint64_t lease, const std::string& key, long long read) {
  const std::int64_t sent = monotonic_ns();
  bool confirmed = false;
  try {
    redis.process(leasehold::Command{"SET", key, std::to_string(read + 1)});
    confirmed = true;
  } catch (const leasehold::Error&) {
    // Unknown: the SET may or may not have run; the checker allows for both.
  }
  recorder.record({.kind = EventKind::counter,
                   .name = name,
                   .lease = lease,
                   .value = read + 1,
                   .read = read,
                   .ok = confirmed,
                   .start = sent});
}

}  // namespace leasehold::testing::torture_worker
