// leasehold-handoff: how soon a waiter gets a lock the holder gives up, and what waiting costs
// Redis. bench/run-handoff runs it against a private redis-server and a 3-master cluster (see
// docs/performance.md). One line per figure, key=value:
//
//   rtt          the round trip of a PING through one Client (the reference)
//   notified     release -> the waiter's lock_until returns (told by the release)
//   elected      an Election's leader resigns -> the next campaigner's wait returns
//   observed     an Election's leader is elected or resigns -> a Watch on another client is told
//   observed_lock  a Lock is taken or released -> a Watch on another client is told (by the
//                server's tracking of the key)
//   polling      the same with a waiter that retries try_lock every --poll-ms (no queue)
//   crash        the holder's key expires (never released) -> the waiter's lock_until returns
//   crashed_leader  an Election's leader stops (never resigns, never extends) and its lease
//                expires -> the next campaigner's wait returns, leading
//   dead_head    release -> lock_until returns for the waiter behind a head that died
//   load         --waiters waiters on one held name for --load-s s: Redis commands per waiter per
//                second, next to the same number of waiters polling every --poll-ms; then
//                --observers watches of one election's leader for --load-s s: the same per
//                observer
//
//   leasehold-handoff --redis URL [--samples N] [--poll-ms MS] [--waiters W] [--observers O]
//                     [--load-s S] [--no-load]
#include <algorithm>
#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"

namespace {

using namespace std::chrono_literals;
using leasehold::Clock;
using Micros = std::chrono::duration<double, std::micro>;

struct Options {
  std::string url;
  std::uint64_t samples = 200;
  std::uint64_t poll_ms = 100;
  std::uint64_t waiters = 100;
  std::uint64_t observers = 1000;
  std::uint64_t load_s = 60;
  bool load = true;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "leasehold-handoff: %s\nusage: leasehold-handoff --redis URL [--samples N] "
               "[--poll-ms MS] [--waiters W] [--observers O] [--load-s S] [--no-load]\n",
               why);
  std::exit(64);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage((arg + " wants a value").c_str());
      return argv[++i];
    };
    if (arg == "--redis")
      options.url = value();
    else if (arg == "--samples")
      options.samples = leasehold::bench::parse_number(arg, value(), usage);
    else if (arg == "--poll-ms")
      options.poll_ms = leasehold::bench::parse_number(arg, value(), usage);
    else if (arg == "--waiters")
      options.waiters = leasehold::bench::parse_number(arg, value(), usage);
    else if (arg == "--observers")
      options.observers = leasehold::bench::parse_number(arg, value(), usage);
    else if (arg == "--load-s")
      options.load_s = leasehold::bench::parse_number(arg, value(), usage);
    else if (arg == "--no-load")
      options.load = false;
    else
      usage(("unknown argument " + arg).c_str());
  }
  if (options.url.empty())
    usage("--redis URL is required");
  if (options.samples == 0 || options.poll_ms == 0 || options.waiters == 0 ||
      options.observers == 0)
    usage("--samples, --poll-ms, --waiters and --observers must be positive");
  return options;
}

void report(const std::string& figure, std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  const auto at = [&](double q) {
    return micros[std::min(micros.size() - 1, static_cast<std::size_t>(q * micros.size()))];
  };
  std::printf("%s samples=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f\n", figure.c_str(), micros.size(),
              at(0.5), at(0.99), micros.back());
  std::fflush(stdout);
}

// Polls against a deadline until `done` holds.
template <class Predicate>
void await(Predicate done) {
  const auto deadline = Clock::now() + 10s;
  while (!done()) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "leasehold-handoff: a waiter never queued\n");
      std::exit(1);
    }
    std::this_thread::yield();
  }
}

long long queued(leasehold::Client& redis, const std::string& lock_key) {
  return redis.process(leasehold::Command{"ZCARD", leasehold::detail::queue_key(lock_key)}).integer;
}

// What Redis counts: every command processed, the calls scripts make included.
long long commands_processed(leasehold::Client& redis) {
  const std::string info = redis.process(leasehold::Command{"INFO", "stats"}).str;
  const std::string field = "total_commands_processed:";
  const auto at = info.find(field);
  return at == std::string::npos ? -1 : std::atoll(info.c_str() + at + field.size());
}

// The calls of the commands clients send while they wait (the tries are scripts, a poll is one
// SET): what a waiter costs in round trips, which INFO's total does not say (it counts the calls
// inside scripts too).
long long client_commands(leasehold::Client& redis) {
  const std::string info = redis.process(leasehold::Command{"INFO", "commandstats"}).str;
  long long calls = 0;
  for (const char* command : {"evalsha", "eval", "set", "ssubscribe", "sunsubscribe"}) {
    const std::string field = std::string("cmdstat_") + command + ":calls=";
    const auto at = info.find(field);
    if (at != std::string::npos)
      calls += std::atoll(info.c_str() + at + field.size());
  }
  return calls;
}

// `count` waiters' or observers' (`who`) load, from the counts taken before.
void report_load(const std::string& mode, leasehold::Client& redis, const Options& options,
                 long long client_before, long long all_before, const char* who = "waiter",
                 std::uint64_t count = 0) {
  const long long client_after = client_commands(redis);
  const long long all_after = commands_processed(redis);
  if (count == 0)
    count = options.waiters;
  const double per = static_cast<double>(count) * static_cast<double>(options.load_s);
  std::printf(
      "load mode=%s %ss=%llu seconds=%llu commands_per_%s_s=%.3f "
      "calls_incl_in_scripts_per_%s_s=%.3f\n",
      mode.c_str(), who, static_cast<unsigned long long>(count),
      static_cast<unsigned long long>(options.load_s), who,
      static_cast<double>(client_after - client_before) / per, who,
      static_cast<double>(all_after - all_before - 2) / per);  // less the INFO calls
  std::fflush(stdout);
}

std::vector<double> rtt(leasehold::Client& redis, std::uint64_t samples) {
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples * 5; ++i) {
    const auto start = Clock::now();
    redis.process(leasehold::Command{"PING"});
    micros.push_back(Micros(Clock::now() - start).count());
  }
  return micros;
}

// The holder (its own Client) releases once the waiter is queued; the waiter notes when its
// lock_until returned. With `dead_head`, the head of the queue is a waiter that died (its place
// queued, never renewed, its ticket a minute long): the waiter behind it gives it its grace
// (WaitOptions::grace, 300 ms), then takes its place.
std::vector<double> notified(leasehold::Client& holder, leasehold::Client& waiter,
                             std::uint64_t samples, bool dead_head = false) {
  const leasehold::Lock<std::string> locks{dead_head ? "handoff-dead" : "handoff", 30s};
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::string name = "n" + std::to_string(i);
    auto held = holder.process(locks.try_lock(name));
    if (dead_head)
      holder.process(leasehold::try_lock_in_turn(
          locks, name, leasehold::WaitTicket{leasehold::LeaseId::generate(), 60s}));
    Clock::time_point got_at;
    std::thread wait([&] {
      auto token = leasehold::lock_for(waiter, locks, name, 10s);
      got_at = Clock::now();
      if (token)
        waiter.process(token->release());
    });
    await([&] { return queued(holder, locks.key(name)) == (dead_head ? 2 : 1); });
    const auto released_at = Clock::now();
    holder.process(held->release());
    wait.join();
    micros.push_back(Micros(got_at - released_at).count());
  }
  return micros;
}

// The same for an Election: the leader resigns once a campaigner is queued; the campaigner notes
// when its wait returned, leading.
std::vector<double> elected(leasehold::Client& holder, leasehold::Client& waiter,
                            std::uint64_t samples) {
  const leasehold::Election<std::string> elections{"handoff", 30s};
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::string name = "e" + std::to_string(i);
    auto leader = leasehold::wait_for(holder, elections.campaign(name), 10s);
    Clock::time_point got_at;
    std::thread campaign([&] {
      auto next = leasehold::wait_for(waiter, elections.campaign(name), 10s);
      got_at = Clock::now();
      if (next)
        waiter.process(elections.resign(*next));
    });
    await([&] { return queued(holder, elections.key(name)) == 1; });
    const auto resigned_at = Clock::now();
    holder.process(elections.resign(*leader));
    campaign.join();
    micros.push_back(Micros(got_at - resigned_at).count());
  }
  return micros;
}

// A Watch (on the observer's client) of one name, whose holder `change(i)` (through another
// client) alternately sets and clears: from the call that makes each change to the watch being
// told. The first take and give-up are not counted: the key's tracking is armed by then.
template <class State, class Change>
std::vector<double> told_after(leasehold::Client& observer, const leasehold::Observed<State>& name,
                               std::uint64_t samples, Change change) {
  leasehold::Watch watch(observer, name);
  const auto told = [&] {
    if (!watch.next(Clock::now() + 10s)) {
      std::fprintf(stderr, "leasehold-handoff: a watch was not told of a change within 10 s\n");
      std::exit(1);
    }
  };
  told();  // the state now
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples + 2; ++i) {
    const auto changed_at = Clock::now();
    change(i);
    told();
    if (i >= 2)
      micros.push_back(Micros(Clock::now() - changed_at).count());
  }
  return micros;
}

std::vector<double> observed(leasehold::Client& holder, leasehold::Client& observer,
                             std::uint64_t samples) {
  const leasehold::Election<std::string> elections{"observed", 30s};
  std::optional<leasehold::LockToken<leasehold::Election<std::string>>> leader;
  return told_after(observer, elections.observe("o"), samples, [&](std::uint64_t i) {
    if (i % 2 == 0)
      leader = leasehold::wait_for(holder, elections.campaign(std::string("o")), 10s);
    else
      holder.process(elections.resign(*leader));
  });
}

std::vector<double> observed_lock(leasehold::Client& holder, leasehold::Client& observer,
                                  std::uint64_t samples) {
  const leasehold::Lock<std::string> locks{"observed", 30s};
  std::optional<leasehold::LockToken<leasehold::Lock<std::string>>> token;
  return told_after(observer, locks.observe("o"), samples, [&](std::uint64_t i) {
    if (i % 2 == 0)
      token = holder.process(locks.try_lock(std::string("o")));
    else
      holder.process(token->release());
  });
}

std::vector<double> polling(leasehold::Client& holder, leasehold::Client& waiter,
                            std::uint64_t samples, std::chrono::milliseconds poll) {
  const leasehold::Lock<std::string> locks{"handoff-poll", 30s};
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::string name = "p" + std::to_string(i);
    auto held = holder.process(locks.try_lock(name));
    std::atomic<bool> tried{false};
    Clock::time_point got_at;
    std::thread wait([&] {
      for (;;) {
        auto token = waiter.process(locks.try_lock(name));
        tried = true;
        if (token) {
          got_at = Clock::now();
          waiter.process(token->release());
          return;
        }
        std::this_thread::sleep_for(poll);
      }
    });
    await([&] { return tried.load(); });
    // A release at a random point of the waiter's poll period, as in a deployment.
    std::this_thread::sleep_for(std::chrono::microseconds(std::rand() % (poll.count() * 1000)));
    const auto released_at = Clock::now();
    holder.process(held->release());
    wait.join();
    micros.push_back(Micros(got_at - released_at).count());
  }
  return micros;
}

// The holder takes a 100 ms lease and never gives it back; from its expiry (its reply's arrival
// + the TTL: the server counted the TTL from a moment no later) to the waiter's grant.
std::vector<double> crash(leasehold::Client& holder, leasehold::Client& waiter,
                          std::uint64_t samples) {
  const leasehold::Lock<std::string> locks{"handoff-crash", 100ms};
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::string name = "c" + std::to_string(i);
    auto held = holder.process(locks.try_lock(name));
    const auto expires_at = Clock::now() + locks.ttl();
    auto token = leasehold::lock_for(waiter, locks, name, 10s);
    micros.push_back(Micros(Clock::now() - expires_at).count());
    if (token)
      waiter.process(token->release());
  }
  return micros;
}

// The same for an election: a leader that crashed (killed, its lease left to run out) and the
// campaigner behind it, from the lease's expiry to the campaign's return.
std::vector<double> crashed_leader(leasehold::Client& holder, leasehold::Client& waiter,
                                   std::uint64_t samples) {
  const leasehold::Election<std::string> elections{"handoff-crash", 100ms};
  std::vector<double> micros;
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::string name = "c" + std::to_string(i);
    auto leader = leasehold::wait_for(holder, elections.campaign(name), 10s);
    const auto expires_at = Clock::now() + elections.ttl();
    auto next = leasehold::wait_for(waiter, elections.campaign(name), 10s);
    micros.push_back(Micros(Clock::now() - expires_at).count());
    if (next)
      waiter.process(elections.resign(*next));
  }
  return micros;
}

// Counts the refused tries of waits (the observer's on_wait).
class RefusedTries : public leasehold::Observer {
 public:
  void on_wait(const leasehold::WaitEvent&) override { ++count; }
  std::atomic<std::uint64_t> count{0};
};

// W async waiters of one Client on one name held for `seconds`, then the same number of threads
// polling try_lock every `poll`: the commands they sent per waiter per second, and the calls
// Redis made for them (those inside scripts too).
void load(leasehold::Client& holder, const Options& options) {
  const auto seconds = std::chrono::seconds(options.load_s);
  // Held past the measured interval: its end would hand the lock down the queue.
  const leasehold::Lock<std::string> locks{"handoff-load", 3 * seconds};
  {
    auto held = holder.process(locks.try_lock("waited"));
    asio::io_context io;
    auto refused = std::make_shared<RefusedTries>();
    leasehold::ClientOptions client_options;
    client_options.observer = refused;
    leasehold::Client waiting(io.get_executor(), options.url, client_options);
    std::atomic<std::uint64_t> ended{0};
    for (std::uint64_t i = 0; i < options.waiters; ++i)
      leasehold::async_lock_until(waiting, locks, std::string("waited"), Clock::now() + 3 * seconds,
                                  [&](std::error_code, auto token) {
                                    ++ended;
                                    if (token)  // the next one's turn
                                      waiting.async_process(token->release(),
                                                            [](std::error_code, bool) {});
                                  });
    std::thread runner([&] { io.run(); });
    // Settled: each waiter queued (its first try) and tried again once its subscription was
    // confirmed (a release may have come in between); what follows is the steady state.
    await([&] { return refused->count.load() >= 2 * options.waiters; });
    const long long client_before = client_commands(holder);
    const long long all_before = commands_processed(holder);
    std::this_thread::sleep_for(seconds);  // the measured interval itself, not a synchronisation
    report_load("notified", holder, options, client_before, all_before);
    holder.process(held->release());
    const auto deadline = Clock::now() + 30s;
    while (ended.load() < options.waiters && Clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    asio::post(io, [&] { waiting.close(); });
    runner.join();
  }
  auto held = holder.process(locks.try_lock("polled"));
  std::atomic<bool> stop{false};
  leasehold::Client polling(options.url);
  std::vector<std::thread> pollers;
  for (std::uint64_t i = 0; i < options.waiters; ++i)
    pollers.emplace_back([&] {
      while (!stop) {
        polling.process(locks.try_lock(std::string("polled")));
        std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));  // all started
  const long long client_before = client_commands(holder);
  const long long all_before = commands_processed(holder);
  std::this_thread::sleep_for(seconds);
  report_load("polling poll_ms=" + std::to_string(options.poll_ms), holder, options, client_before,
              all_before);
  stop = true;
  for (auto& poller : pollers)
    poller.join();
  holder.process(held->release());
}

// --observers watches (one Client) of one election's leader, held for longer than the measured
// interval and not extended: the commands they sent per observer per second, and the calls
// Redis made for them, once each has been told the leader and has looked on its subscription.
void observe_load(leasehold::Client& holder, const Options& options) {
  const auto seconds = std::chrono::seconds(options.load_s);
  const leasehold::Election<std::string> elections{"handoff-observed", 3 * seconds};
  auto leader = leasehold::wait_for(holder, elections.campaign("observed"), 10s);
  if (!leader)
    throw std::runtime_error("the observed election's campaign did not lead");
  leasehold::Client observing(options.url);
  const long long started = client_commands(holder);
  std::atomic<std::uint64_t> told{0};
  std::vector<std::unique_ptr<leasehold::Watch<std::optional<leasehold::Leader>>>> watches;
  for (std::uint64_t i = 0; i < options.observers; ++i)
    watches.push_back(std::make_unique<leasehold::Watch<std::optional<leasehold::Leader>>>(
        observing, elections.observe("observed"),
        [&told](std::error_code, const std::optional<leasehold::Leader>&) { ++told; }));
  // Settled: each observer was told the leader, and looked again on its subscription (a change
  // may have come in between); what follows is the steady state.
  await([&] {
    if (told.load() >= options.observers &&
        client_commands(holder) - started >= 2 * static_cast<long long>(options.observers))
      return true;
    std::this_thread::sleep_for(10ms);  // polling against await's deadline
    return false;
  });
  const long long client_before = client_commands(holder);
  const long long all_before = commands_processed(holder);
  std::this_thread::sleep_for(seconds);  // the measured interval itself, not a synchronisation
  report_load("observing", holder, options, client_before, all_before, "observer",
              options.observers);
  watches.clear();
  holder.process(elections.resign(*leader));
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    leasehold::Client holder(options.url);
    leasehold::Client waiter(options.url);
    report("rtt", rtt(holder, options.samples));
    report("notified", notified(holder, waiter, options.samples));
    report("elected", elected(holder, waiter, options.samples));
    report("observed", observed(holder, waiter, options.samples));
    report("observed_lock", observed_lock(holder, waiter, options.samples));
    report("polling poll_ms=" + std::to_string(options.poll_ms),
           polling(holder, waiter, std::max<std::uint64_t>(1, options.samples / 4),
                   std::chrono::milliseconds(options.poll_ms)));
    report("crash", crash(holder, waiter, std::max<std::uint64_t>(1, options.samples / 4)));
    report("crashed_leader",
           crashed_leader(holder, waiter, std::max<std::uint64_t>(1, options.samples / 4)));
    report("dead_head",
           notified(holder, waiter, std::max<std::uint64_t>(1, options.samples / 10), true));
    if (options.load) {
      load(holder, options);
      observe_load(holder, options);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "leasehold-handoff: %s\n", e.what());
    return 1;
  }
  return 0;
}
