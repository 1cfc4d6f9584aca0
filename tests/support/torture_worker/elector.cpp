// The elector mode: run_elector on the first of --names, an Election<std::string>{"torture",
// --ttl-ms, --prefix}. Each term is a section of --cs-ms MIN[:MAX] (cut short when the
// leadership ends), recorded as a grant whose fencing number is the term; the elector resigns
// when it returns and stands again. Runs --duration-ms, or until the file --stop-file exists.
#include <unistd.h>

#include <atomic>
#include <random>
#include <stop_token>
#include <string>
#include <thread>

#include "worker.hpp"

namespace leasehold::testing::torture_worker {

int run_elector(const Options& options) {
  Recorder recorder{options.text("out")};
  leasehold::ClientOptions client_options;
  client_options.client_name = options.text("client-name", "torture-elector");
  leasehold::Client redis(options.text("url"), client_options);
  const std::string prefix = options.text("prefix", "torture");  // the election views it
  const leasehold::Election<std::string> elections("torture", ms(options.number("ttl-ms", 1000)),
                                                   prefix);
  const std::string name = options.names().front();
  const auto cs_range = options.text("cs-ms", "10");
  const auto colon = cs_range.find(':');
  std::mt19937 random{static_cast<unsigned>(::getpid())};
  std::uniform_int_distribution<long long> cs_length(
      std::stoll(cs_range.substr(0, colon)),
      std::stoll(colon == std::string::npos ? cs_range : cs_range.substr(colon + 1)));

  // The campaign of the term to come: its lease number and when it was asked for.
  std::uint64_t lease = 0;
  std::int64_t asked_at = 0;
  std::atomic<std::int64_t> lost_at{0};
  const auto campaign = [&] {
    lease = recorder.next_lease();
    asked_at = monotonic_ns();
    recorder.record({.t = asked_at, .kind = EventKind::acquire_call, .name = name, .lease = lease});
  };

  leasehold::ElectorOptions elector;
  elector.deposed = [&](const leasehold::Deposed& deposed) {
    if (deposed.how == leasehold::TermEnd::lost) {
      record_loss(recorder, lost_at, name, lease, 'w', deposed.cause);
      recorder.record({.kind = EventKind::release_fail, .name = name, .lease = lease});
    } else {
      recorder.record({.kind = deposed.cause ? EventKind::release_unknown : EventKind::release_ok,
                       .name = name,
                       .lease = lease});
    }
    campaign();
  };

  std::stop_source stop;
  const std::int64_t end = monotonic_ns() + options.number("duration-ms", 1000) * 1'000'000;
  const std::string stop_file = options.text("stop-file");
  std::thread stopper([&] {
    while (monotonic_ns() < end && (stop_file.empty() || ::access(stop_file.c_str(), F_OK) != 0))
      std::this_thread::sleep_for(10ms);  // the stop file's poll
    stop.request_stop();
  });
  campaign();
  leasehold::run_elector(
      redis, elections, name,
      [&](const leasehold::Term<std::string>& term, std::stop_token leading) {
        lost_at = 0;
        recorder.record({.kind = EventKind::acquire_ok,
                         .name = name,
                         .lease = lease,
                         .deadline = to_monotonic_ns(term.leader.deadline()),
                         .value = static_cast<std::int64_t>(term.number),
                         .start = asked_at});
        ExtensionWatch observe(recorder, term.leader, name, lease, 'w');
        const std::stop_callback on_end(leading, [&] { lost_at = monotonic_ns(); });
        recorder.record({.kind = EventKind::cs_begin, .name = name, .lease = lease});
        hold_until(monotonic_ns() + cs_length(random) * 1'000'000, [&] {
          observe();
          return !leading.stop_requested() && !term.leader.expired();
        });
        observe();
        // As docs/election.md asks of a leader: its stop token comes by a timer, which runs late
        // after a stall (this process stopped past the deadline), so the token's own deadline is
        // checked too before the step that must happen while leading, after the stamp.
        const std::int64_t ended = monotonic_ns();
        recorder.record({.t = ended,
                         .kind = EventKind::cs_end,
                         .name = name,
                         .lease = lease,
                         .valid = !leading.stop_requested() && !term.leader.expired()});
        // From here on this leader does not act: the elector resigns next (or the lease is lost).
        recorder.record({.kind = EventKind::release_call, .name = name, .lease = lease});
      },
      elector, stop.get_token());
  stopper.join();
  return 0;
}

}  // namespace leasehold::testing::torture_worker
