// leasehold doctor's checks of the connection to a server: whether its clock runs and how far it
// is from this host's, and the round trip of a command.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

long long micros_of(const Reply& time) {
  return std::stoll(time.elements.at(0).str) * 1'000'000 + std::stoll(time.elements.at(1).str);
}

long long local_micros(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<microseconds>(at.time_since_epoch()).count();
}

std::string format_micros(long long us) {
  if (std::llabs(us) >= 1'000'000)
    return format_duration(milliseconds(std::llabs(us) / 1000));
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", static_cast<double>(std::llabs(us)) / 1000.0);
  return text;
}

}  // namespace

// The server's clock must run (keys expire by it); an offset from this host's does not shorten a
// lease, but a clock that far off is likely to be stepped, and a step does.
Finding clock_finding(Client& client, const ServerFacts& facts) {
  const Reply first = ask(client, {"TIME"});
  std::this_thread::sleep_for(milliseconds(1));  // two readings 1 ms apart must differ
  const auto before = std::chrono::system_clock::now();
  const Reply second = ask(client, {"TIME"});
  const auto after = std::chrono::system_clock::now();
  if (first.is_error() || second.is_error() || first.elements.size() != 2 ||
      second.elements.size() != 2) {
    return {"clock", Level::warning,
            "clock: could not be checked (" +
                refusal("TIME", first.is_error() ? first : second, facts.user) + ")"};
  }
  const long long moved = micros_of(second) - micros_of(first);
  if (moved <= 0) {
    return {"clock", Level::problem,
            "clock: the server's clock did not move forward between two readings: keys would "
            "not expire when they should; fix the server's clock"};
  }
  const long long offset =
      micros_of(second) - (local_micros(before) + (local_micros(after) - local_micros(before)) / 2);
  const std::string side = offset >= 0 ? "ahead of" : "behind";
  if (std::llabs(offset) > 1'000'000) {
    return {"clock", Level::warning,
            "clock: the server's clock is " + format_micros(offset) + " " + side +
                " this host's: a lease does not depend on it, but a clock this far off may be "
                "stepped, and a step of the server's clock shortens or lengthens every lease by "
                "as much; check the time sync of both"};
  }
  return {
      "clock", Level::ok,
      "clock: the server's clock runs and is within " + format_micros(offset) + " of this host's"};
}

Finding round_trip_finding(Client& client, const ServerFacts& facts) {
  constexpr int kPings = 5;
  std::vector<long long> times;
  for (int i = 0; i < kPings; ++i) {
    const auto sent = std::chrono::steady_clock::now();
    const Reply reply = ask(client, {"PING"});
    if (reply.is_error()) {
      return {"round-trip", Level::warning,
              "round trip: could not be measured (" + refusal("PING", reply, facts.user) + ")"};
    }
    times.push_back(
        std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - sent).count());
  }
  std::sort(times.begin(), times.end());
  const long long median = times[kPings / 2];
  const std::string measured =
      "round trip: median " + format_micros(median) + " over " + std::to_string(kPings) + " PINGs";
  if (median > 10'000) {
    return {"round-trip", Level::warning,
            measured +
                ": every acquire, extend and release waits for one; keep TTLs long "
                "against it, or run the clients nearer to Redis"};
  }
  return {"round-trip", Level::ok, measured};
}
}  // namespace leasehold::cli::doctor_detail
