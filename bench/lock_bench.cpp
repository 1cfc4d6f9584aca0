// leasehold-bench: lock cycles per second through the library, comparable with pairbench.
//
//   leasehold-bench --redis redis://127.0.0.1:PORT --workers W --keys K --cycles N
//                   [--ttl-ms 10000] [--mode lock|read|write|semaphore|set] [--permits 8]
//                   [--names 1] [--fencing off|on]
//                   [--release leasehold|plain] [--identity on|off] [--connections 1]
//                   [--warmup 1000]
//
// W workers (coroutines on one thread running one io_context) each loop: pick one of K names at
// random, try to take it, and on success release it. mode lock: Lock<std::uint64_t>::try_lock
// (SET NX PX GET) then release (EVALSHA); mode read / write: RwLock<std::uint64_t>::try_read /
// try_write (EVALSHA) then release (EVALSHA); mode semaphore: Semaphore<std::uint64_t> of
// --permits permits per name, try_acquire (EVALSHA) then release (EVALSHA). --release plain (mode
// lock only) releases with a plain compare-and-delete script instead of the token's release,
// which also tells the name's waiters: the reference for what that costs when nobody waits.
// --identity off takes leases without their holder's identity (holder.hpp): the reference for
// what the identity costs.
// --names M: each cycle takes M names at once (distinct, spread over the K). Mode set: one
// LockSet of the M names (one script), released by its token (one script); mode lock: the M
// locks one by one, in name order, each given back if a later one is busy, then released one by
// one: what a caller without LockSet does.
// --fencing on takes fenced leases (with_fencing(): every grant also advances the fence counter):
// next to the same run with --fencing off, what a fencing number costs.
// --connections C: a pool of C Clients on the same
// io_context, workers assigned round-robin (default: one Client shared by every worker).
//
// A cycle is a successful acquire and its release; the run stops after exactly N cycles (a busy
// attempt is counted in `failed` and retried). Latency is that of a whole successful cycle, from
// the start of the acquire to the release's result. A warm-up of --warmup cycles (not measured)
// connects every client and loads the scripts first. Prints one line, as pairbench does:
//
//   cycles_per_s=... p50_us=... p99_us=... attempts_per_s=... failed=...
//
// bench/run-locks compares it with pairbench (see docs/performance.md).
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>
#include "bench_args.hpp"

#include "leasehold/leasehold.hpp"

namespace {

using BenchClock = std::chrono::steady_clock;

struct Options {
  std::string redis = "redis://127.0.0.1:6379";
  std::size_t workers = 1;
  std::uint64_t keys = 10000;
  std::uint64_t cycles = 100000;
  std::uint64_t ttl_ms = 10000;
  std::string mode = "lock";
  std::uint32_t permits = 8;
  std::string release = "leasehold";
  bool identity = true;
  std::size_t connections = 1;
  std::uint64_t warmup = 1000;
  std::uint64_t names = 1;
  bool fencing = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "leasehold-bench: %s\n"
      "usage: leasehold-bench --redis URL --workers W --keys K --cycles N [--ttl-ms 10000] "
      "[--mode lock|read|write|semaphore|set] [--permits 8] [--release leasehold|plain] "
      "[--identity on|off] [--connections 1] [--warmup 1000] [--names 1] "
      "[--fencing off|on]\n",
      why);
  std::exit(64);
}

std::uint64_t parse_number(std::string_view name, std::string_view text) {
  return leasehold::bench::parse_number(name, text, usage);
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "--help" || name == "-h")
      usage("lock cycle benchmark");
    if (i + 1 >= argc)
      usage((std::string(name) + " needs a value").c_str());
    const std::string_view value = argv[++i];
    if (name == "--redis")
      options.redis = value;
    else if (name == "--workers")
      options.workers = parse_number(name, value);
    else if (name == "--keys")
      options.keys = parse_number(name, value);
    else if (name == "--cycles")
      options.cycles = parse_number(name, value);
    else if (name == "--ttl-ms" || name == "--ttl")
      options.ttl_ms = parse_number(name, value);
    else if (name == "--mode")
      options.mode = value;
    else if (name == "--permits")
      options.permits = static_cast<std::uint32_t>(parse_number(name, value));
    else if (name == "--release")
      options.release = value;
    else if (name == "--identity" && (value == "on" || value == "off"))
      options.identity = value == "on";
    else if (name == "--connections")
      options.connections = parse_number(name, value);
    else if (name == "--warmup")
      options.warmup = parse_number(name, value);
    else if (name == "--names")
      options.names = parse_number(name, value);
    else if (name == "--fencing" && (value == "on" || value == "off"))
      options.fencing = value == "on";
    else
      usage(("unknown option " + std::string(name)).c_str());
  }
  if (options.mode != "lock" && options.mode != "read" && options.mode != "write" &&
      options.mode != "semaphore" && options.mode != "set")
    usage("--mode is lock, read, write, semaphore or set");
  if (options.names == 0 || options.names > options.keys)
    usage("--names must be between 1 and --keys");
  if (options.names > 1 && options.mode != "lock" && options.mode != "set")
    usage("--names goes with --mode lock or set");
  if (options.names > 1 && options.release == "plain")
    usage("--names goes with --release leasehold");
  if (options.release != "leasehold" && options.release != "plain")
    usage("--release is leasehold or plain");
  if (options.release == "plain" && options.mode != "lock")
    usage("--release plain goes with --mode lock");
  if (options.permits == 0)
    usage("--permits must be positive");
  if (options.workers == 0 || options.keys == 0 || options.cycles == 0 ||
      options.connections == 0 || options.ttl_ms == 0)
    usage("--workers, --keys, --cycles, --connections and --ttl-ms must be positive");
  return options;
}

// The shared state of one phase (warm-up or measured). Everything runs on one thread.
struct Phase {
  std::uint64_t target = 0;    // successful cycles wanted
  std::uint64_t reserved = 0;  // cycles done plus attempts in progress: never exceeds target
  std::uint64_t cycles = 0;
  std::uint64_t failed = 0;
  std::uint64_t lost = 0;  // releases that found the lease gone (should stay 0)
  bool record = false;
  std::vector<std::uint64_t> latencies_ns;

  // An attempt that did not get its lease(s): its reservation is given up.
  void attempt_failed() {
    --reserved;
    ++failed;
  }
  // A cycle done: counted, and its latency recorded when the phase records.
  void cycle_done(BenchClock::time_point start, BenchClock::time_point end) {
    ++cycles;
    if (record)
      latencies_ns.push_back(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
  }
};

struct Failure {
  bool failed = false;
  std::string what;

  void set(std::string why) {
    if (!failed) {
      failed = true;
      what = std::move(why);
    }
  }
};

// xorshift64: the key choice must cost nothing next to a round trip.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

// The token's own release.
struct TokenRelease {
  template <class Token>
  asio::awaitable<bool> operator()(leasehold::Client& client, const Token& token,
                                   std::uint64_t /*name*/) const {
    co_return co_await client.async_process(token.release(), asio::use_awaitable);
  }
};

// A compare-and-delete of the lock key and nothing else (no look at waiters), loaded once.
constexpr std::string_view kPlainReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

struct PlainRelease {
  leasehold::Lock<std::uint64_t> lock;
  std::string sha;

  template <class Token>
  asio::awaitable<bool> operator()(leasehold::Client& client, const Token& token,
                                   std::uint64_t name) const {
    // Built before the co_await: g++ 12 cannot keep an initializer list across one.
    const leasehold::Command release(
        std::vector<std::string>{"EVALSHA", sha, "1", lock.key(name), token.value()});
    const leasehold::Reply reply = co_await client.async_process(release, asio::use_awaitable);
    co_return reply.integer == 1;
  }
};

// One worker: acquire(name) makes the acquire query (TryLock, TryRead, TryWrite or TryAcquire);
// release(client, token, name) gives it back.
template <class Acquire, class Release>
asio::awaitable<void> worker(leasehold::Client& client, Acquire acquire, Release release,
                             std::uint64_t keys, Rng rng, Phase& phase, Failure& failure) {
  try {
    while (!failure.failed && phase.reserved < phase.target) {
      ++phase.reserved;
      const std::uint64_t name = rng.next() % keys;
      const auto start = BenchClock::now();
      auto token = co_await client.async_process(acquire(name), asio::use_awaitable);
      if (!token) {
        phase.attempt_failed();
        continue;
      }
      const bool released = co_await release(client, *token, name);
      phase.cycle_done(start, BenchClock::now());
      if (!released)
        ++phase.lost;
    }
  } catch (const std::exception& e) {
    failure.set(e.what());
  }
}

// The `count` distinct names of a cycle that draws `first`: spread evenly over the `keys`.
std::vector<std::uint64_t> names_of(std::uint64_t first, std::uint64_t count, std::uint64_t keys) {
  std::vector<std::uint64_t> names;
  for (std::uint64_t i = 0; i < count; ++i)
    names.push_back((first + i * (keys / count)) % keys);
  std::sort(names.begin(), names.end());
  return names;
}

// One worker taking several single locks per cycle, one by one in name order (a busy one gives
// back those taken), then releasing them one by one.
asio::awaitable<void> singles_worker(leasehold::Client& client, leasehold::Lock<std::uint64_t> lock,
                                     std::uint64_t count, std::uint64_t keys, Rng rng, Phase& phase,
                                     Failure& failure) {
  using Token = leasehold::LockToken<leasehold::Lock<std::uint64_t>>;
  try {
    while (!failure.failed && phase.reserved < phase.target) {
      ++phase.reserved;
      const std::vector<std::uint64_t> names = names_of(rng.next() % keys, count, keys);
      const auto start = BenchClock::now();
      std::vector<Token> held;
      for (const std::uint64_t name : names) {
        auto token = co_await client.async_process(lock.try_lock(name), asio::use_awaitable);
        if (!token)
          break;
        held.push_back(std::move(*token));
      }
      const bool all = held.size() == names.size();
      for (const Token& token : held) {
        if (!co_await client.async_process(token.release(), asio::use_awaitable))
          ++phase.lost;
      }
      if (!all) {
        phase.attempt_failed();
        continue;
      }
      phase.cycle_done(start, BenchClock::now());
    }
  } catch (const std::exception& e) {
    failure.set(e.what());
  }
}

struct Measurement {
  double seconds = 0;
  Phase phase;
};

// Starts one worker on a client (the mode's worker<Acquire>, type-erased).
using WorkerFactory =
    std::function<asio::awaitable<void>(leasehold::Client&, Rng, Phase&, Failure&)>;

template <class Acquire, class Release = TokenRelease>
WorkerFactory worker_factory(Acquire acquire, std::uint64_t keys, Release release = {}) {
  return
      [acquire, release, keys](leasehold::Client& client, Rng rng, Phase& phase, Failure& failure) {
        return worker(client, acquire, release, keys, rng, phase, failure);
      };
}

asio::awaitable<void> drive(std::vector<leasehold::Client>& clients, const Options& options,
                            const WorkerFactory& make_worker,
                            const std::vector<std::uint64_t>& seeds, Measurement& measurement,
                            Failure& failure) {
  try {
    for (leasehold::Client& client : clients)
      co_await client.async_connect(asio::use_awaitable);
  } catch (const std::exception& e) {
    failure.set(e.what());
  }
  auto executor = co_await asio::this_coro::executor;
  Phase warmup;
  for (Phase* phase : {&warmup, &measurement.phase}) {
    const bool record = phase == &measurement.phase;
    phase->target = record ? options.cycles : options.warmup;
    phase->record = record;
    if (phase->target == 0 || failure.failed)
      continue;
    if (record)
      phase->latencies_ns.reserve(options.cycles);
    // Counts the workers still running; the last one to finish wakes this coroutine.
    asio::steady_timer all_done(executor, BenchClock::time_point::max());
    std::size_t running = options.workers;
    const auto start = BenchClock::now();
    for (std::size_t w = 0; w < options.workers; ++w) {
      // The warm-up and the measured phase draw different names.
      const Rng rng{record ? seeds[w] : (seeds[w] * 0x9e3779b97f4a7c15ULL) | 1};
      asio::co_spawn(executor, make_worker(clients[w % clients.size()], rng, *phase, failure),
                     [&running, &all_done](std::exception_ptr) {
                       if (--running == 0)
                         all_done.cancel();
                     });
    }
    std::error_code ignored;
    co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (record)
      measurement.seconds = std::chrono::duration<double>(BenchClock::now() - start).count();
  }
  for (leasehold::Client& client : clients)
    client.close();
}

Measurement run(const Options& options, const WorkerFactory& make_worker, Failure& failure) {
  asio::io_context io(1);
  Measurement measurement;
  std::vector<leasehold::Client> clients;
  clients.reserve(options.connections);
  for (std::size_t c = 0; c < options.connections; ++c)
    clients.emplace_back(io.get_executor(), options.redis);
  // The workers' seeds are drawn here: an mt19937 in drive()'s coroutine frame makes g++ 12 report
  // a false -Wmismatched-new-delete (Asio's frame allocator, inlined).
  std::mt19937_64 random(std::random_device{}());
  std::vector<std::uint64_t> seeds(options.workers);
  for (std::uint64_t& seed : seeds)
    seed = random() | 1;  // xorshift needs a nonzero state
  asio::co_spawn(io, drive(clients, options, make_worker, seeds, measurement, failure),
                 [&failure](std::exception_ptr error) {
                   if (error)
                     failure.set("the benchmark driver failed");
                 });
  io.run();
  return measurement;
}

// `lease` as the options ask: fenced or not.
template <class Lease>
Lease as_asked(const Lease& lease, const Options& options) {
  return options.fencing ? lease.with_fencing() : lease;
}

// Nearest-rank percentile in microseconds, as pairbench computes it.
double percentile_us(const std::vector<std::uint64_t>& sorted_ns, double p) {
  if (sorted_ns.empty())
    return 0;
  const auto n = static_cast<double>(sorted_ns.size());
  auto rank = static_cast<std::int64_t>(p / 100.0 * n + 0.999999) - 1;
  rank = std::clamp<std::int64_t>(rank, 0, static_cast<std::int64_t>(sorted_ns.size()) - 1);
  return static_cast<double>(sorted_ns[static_cast<std::size_t>(rank)]) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  leasehold::set_holder_identity(options.identity);
  const std::chrono::milliseconds ttl(options.ttl_ms);
  Failure failure;
  Measurement measurement;
  try {
    if (options.mode == "lock" && options.release == "plain") {
      const auto lock = as_asked(leasehold::Lock<std::uint64_t>("bench", ttl), options);
      leasehold::Client loader(options.redis);
      const std::string sha =
          loader.process(leasehold::Command{"SCRIPT", "LOAD", kPlainReleaseScript}).str;
      measurement = run(options,
                        worker_factory([lock](std::uint64_t name) { return lock.try_lock(name); },
                                       options.keys, PlainRelease{lock, sha}),
                        failure);
    } else if (options.mode == "lock" && options.names > 1) {
      const auto lock = as_asked(leasehold::Lock<std::uint64_t>("bench", ttl), options);
      measurement = run(
          options,
          [lock, count = options.names, keys = options.keys](leasehold::Client& client, Rng rng,
                                                             Phase& phase, Failure& failure) {
            return singles_worker(client, lock, count, keys, rng, phase, failure);
          },
          failure);
    } else if (options.mode == "set") {
      const auto lock = as_asked(leasehold::Lock<std::uint64_t>("bench", ttl), options);
      measurement = run(options,
                        worker_factory(
                            [lock, count = options.names, keys = options.keys](std::uint64_t name) {
                              const std::vector<std::uint64_t> names = names_of(name, count, keys);
                              return leasehold::LockSet<leasehold::Lock<std::uint64_t>>(
                                         lock, std::span<const std::uint64_t>(names))
                                  .try_lock();
                            },
                            options.keys),
                        failure);
    } else if (options.mode == "lock") {
      const auto lock = as_asked(leasehold::Lock<std::uint64_t>("bench", ttl), options);
      measurement = run(
          options,
          worker_factory([lock](std::uint64_t name) { return lock.try_lock(name); }, options.keys),
          failure);
    } else if (options.mode == "semaphore") {
      const auto semaphore =
          as_asked(leasehold::Semaphore<std::uint64_t>("bench", options.permits, ttl), options);
      measurement = run(
          options,
          worker_factory([semaphore](std::uint64_t name) { return semaphore.try_acquire(name); },
                         options.keys),
          failure);
    } else {
      const auto rwlock = as_asked(leasehold::RwLock<std::uint64_t>("bench", ttl), options);
      if (options.mode == "read")
        measurement =
            run(options,
                worker_factory([rwlock](std::uint64_t name) { return rwlock.try_read(name); },
                               options.keys),
                failure);
      else
        measurement =
            run(options,
                worker_factory([rwlock](std::uint64_t name) { return rwlock.try_write(name); },
                               options.keys),
                failure);
    }
  } catch (const std::exception& e) {
    failure.set(e.what());
  }
  if (failure.failed) {
    std::fprintf(stderr, "leasehold-bench: %s\n", failure.what.c_str());
    return 1;
  }
  Phase& phase = measurement.phase;
  if (phase.lost > 0) {
    std::fprintf(stderr, "leasehold-bench: %llu releases found their lease gone (TTL too short?)\n",
                 static_cast<unsigned long long>(phase.lost));
    return 1;
  }
  std::sort(phase.latencies_ns.begin(), phase.latencies_ns.end());
  const double attempts = static_cast<double>(phase.cycles + phase.failed);
  std::printf("cycles_per_s=%.0f p50_us=%.1f p99_us=%.1f attempts_per_s=%.0f failed=%llu\n",
              static_cast<double>(phase.cycles) / measurement.seconds,
              percentile_us(phase.latencies_ns, 50), percentile_us(phase.latencies_ns, 99),
              attempts / measurement.seconds, static_cast<unsigned long long>(phase.failed));
  return 0;
}
