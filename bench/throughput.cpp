// leasehold-throughput: how many requests one pipelined Client connection carries.
//
//   leasehold-throughput --redis redis://127.0.0.1:PORT --callers 64 --mode coroutines
//                        --requests 200000 [--value-size 16] [--warmup 2000]
//                        [--tls-ca-file FILE]      (with a rediss:// URL)
//
// W callers share ONE leasehold::Client and each runs SET bench:{i % 1000} <value> in a loop until
// N requests in total are done. threads: W std::threads calling the sync process() (the client has
// its own I/O thread). coroutines: one thread runs an io_context, the client lives on it and W
// coroutines co_await async_process(). Prints one line:
//
//   mode=... callers=W requests=N seconds=... requests_per_s=... p50_us=... p99_us=...
//
// Latency is per request: from the call to its result (one clock read per request: a caller's
// next call starts when its previous one ended, give or take a few instructions). A warm-up of
// --warmup requests (same callers, not measured) runs first. bench/run-throughput compares it with
// redis-benchmark.
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <latch>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include "bench_args.hpp"

#include "leasehold/leasehold.hpp"

namespace {

using BenchClock = std::chrono::steady_clock;

struct Options {
  std::string redis = "redis://127.0.0.1:6379";
  std::string mode = "coroutines";
  std::size_t callers = 1;
  std::uint64_t requests = 100000;
  std::size_t value_size = 16;
  std::uint64_t warmup = 2000;
  std::string tls_ca_file;  // for a rediss:// URL: the CA that signed the server's certificate

  leasehold::ClientOptions client_options() const {
    leasehold::ClientOptions client;
    client.tls.ca_file = tls_ca_file;
    return client;
  }
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "leasehold-throughput: %s\n"
               "usage: leasehold-throughput --redis URL --callers W --mode threads|coroutines "
               "--requests N [--value-size 16] [--warmup 2000] [--tls-ca-file FILE]\n",
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
      usage("connection throughput benchmark");
    if (i + 1 >= argc)
      usage((std::string(name) + " needs a value").c_str());
    const std::string_view value = argv[++i];
    if (name == "--redis")
      options.redis = value;
    else if (name == "--mode")
      options.mode = value;
    else if (name == "--callers")
      options.callers = parse_number(name, value);
    else if (name == "--requests")
      options.requests = parse_number(name, value);
    else if (name == "--value-size")
      options.value_size = parse_number(name, value);
    else if (name == "--warmup")
      options.warmup = parse_number(name, value);
    else if (name == "--tls-ca-file")
      options.tls_ca_file = value;
    else
      usage(("unknown option " + std::string(name)).c_str());
  }
  if (options.mode != "threads" && options.mode != "coroutines")
    usage("--mode is threads or coroutines");
  if (options.callers == 0 || options.requests == 0)
    usage("--callers and --requests must be positive");
  return options;
}

// The commands, built once: the benchmark measures the client, not string building.
std::vector<leasehold::Command> make_commands(std::size_t value_size) {
  const std::string value(value_size, 'x');
  std::vector<leasehold::Command> commands;
  commands.reserve(1000);
  for (int k = 0; k < 1000; ++k) {
    const std::string key = "bench:" + std::to_string(k);
    commands.push_back(leasehold::Command{"SET", key, value});
  }
  return commands;
}

// Work shared by the callers of one phase: request numbers are handed out one at a time.
struct Phase {
  std::uint64_t total = 0;
  std::atomic<std::uint64_t> next{0};
  bool record = false;

  // The next request number, or false when the phase is done.
  bool claim(std::uint64_t& i) {
    i = next.fetch_add(1, std::memory_order_relaxed);
    return i < total;
  }
};

// The first failure of any caller; the others stop claiming work.
struct Failure {
  std::mutex mutex;
  std::string what;
  std::atomic<bool> failed{false};

  void set(const std::string& why) {
    std::lock_guard lock(mutex);
    if (!failed.exchange(true))
      what = why;
  }
};

double micros(BenchClock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Measurement {
  double seconds = 0;
  std::vector<std::vector<float>> latencies;  // per caller, microseconds
};

Measurement run_threads(const Options& options, const std::vector<leasehold::Command>& commands,
                        Failure& failure) {
  leasehold::Client client(options.redis, options.client_options());
  client.connect();
  Measurement measurement;
  measurement.latencies.resize(options.callers);
  for (const bool record : {false, true}) {
    Phase phase;
    phase.total = record ? options.requests : options.warmup;
    phase.record = record;
    if (phase.total == 0)
      continue;
    std::latch ready(static_cast<std::ptrdiff_t>(options.callers) + 1);
    std::latch go(1);
    std::vector<std::thread> threads;
    threads.reserve(options.callers);
    for (std::size_t c = 0; c < options.callers; ++c) {
      std::vector<float>& latencies = measurement.latencies[c];
      if (record)
        latencies.reserve(options.requests / options.callers + 16);
      threads.emplace_back([&, record] {
        ready.count_down();
        go.wait();
        try {
          std::uint64_t i = 0;
          auto start = BenchClock::now();
          while (!failure.failed.load(std::memory_order_relaxed) && phase.claim(i)) {
            client.process(commands[i % commands.size()]);
            const auto end = BenchClock::now();  // also the next request's start
            if (record)
              latencies.push_back(static_cast<float>(micros(end - start)));
            start = end;
          }
        } catch (const std::exception& e) {
          failure.set(e.what());
        }
      });
    }
    ready.arrive_and_wait();
    const auto start = BenchClock::now();
    go.count_down();
    for (std::thread& thread : threads)
      thread.join();
    if (record)
      measurement.seconds = std::chrono::duration<double>(BenchClock::now() - start).count();
  }
  return measurement;
}

asio::awaitable<void> caller(leasehold::Client& client,
                             const std::vector<leasehold::Command>& commands, Phase& phase,
                             std::vector<float>& latencies, Failure& failure) {
  try {
    std::uint64_t i = 0;
    auto start = BenchClock::now();
    while (!failure.failed.load(std::memory_order_relaxed) && phase.claim(i)) {
      co_await client.async_process(commands[i % commands.size()], asio::use_awaitable);
      const auto end = BenchClock::now();  // also the next request's start
      if (phase.record)
        latencies.push_back(static_cast<float>(micros(end - start)));
      start = end;
    }
  } catch (const std::exception& e) {
    failure.set(e.what());
  }
}

// Runs the phases one after the other: the callers of a phase all start together.
asio::awaitable<void> drive(leasehold::Client& client, const Options& options,
                            const std::vector<leasehold::Command>& commands,
                            Measurement& measurement, Failure& failure) {
  try {
    co_await client.async_connect(asio::use_awaitable);
  } catch (const std::exception& e) {
    failure.set(e.what());
    client.close();
    co_return;
  }
  auto executor = co_await asio::this_coro::executor;
  for (const bool record : {false, true}) {
    Phase phase;
    phase.total = record ? options.requests : options.warmup;
    phase.record = record;
    if (phase.total == 0)
      continue;
    // Counts the callers still running; the last one to finish wakes this coroutine.
    asio::steady_timer all_done(executor, BenchClock::time_point::max());
    std::size_t running = options.callers;
    const auto start = BenchClock::now();
    for (std::size_t c = 0; c < options.callers; ++c) {
      std::vector<float>& latencies = measurement.latencies[c];
      if (record)
        latencies.reserve(options.requests / options.callers + 16);
      asio::co_spawn(executor, caller(client, commands, phase, latencies, failure),
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
  client.close();
}

Measurement run_coroutines(const Options& options, const std::vector<leasehold::Command>& commands,
                           Failure& failure) {
  asio::io_context io(1);
  Measurement measurement;
  measurement.latencies.resize(options.callers);
  {
    leasehold::Client client(io.get_executor(), options.redis, options.client_options());
    asio::co_spawn(io, drive(client, options, commands, measurement, failure),
                   [&failure](std::exception_ptr error) {
                     if (error)
                       failure.set("the benchmark driver failed");
                   });
    io.run();
  }
  return measurement;
}

double percentile(std::vector<float>& sorted_latencies, double p) {
  if (sorted_latencies.empty())
    return 0;
  const auto rank = static_cast<std::size_t>(p * static_cast<double>(sorted_latencies.size() - 1));
  return sorted_latencies[rank];
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const std::vector<leasehold::Command> commands = make_commands(options.value_size);
  Failure failure;
  Measurement measurement;
  try {
    measurement = options.mode == "threads" ? run_threads(options, commands, failure)
                                            : run_coroutines(options, commands, failure);
  } catch (const std::exception& e) {
    failure.set(e.what());
  }
  if (failure.failed) {
    std::fprintf(stderr, "leasehold-throughput: %s\n", failure.what.c_str());
    return 1;
  }
  std::vector<float> all;
  all.reserve(options.requests);
  for (const std::vector<float>& latencies : measurement.latencies)
    all.insert(all.end(), latencies.begin(), latencies.end());
  std::sort(all.begin(), all.end());
  std::printf(
      "mode=%s callers=%zu requests=%llu seconds=%.3f requests_per_s=%.0f p50_us=%.1f "
      "p99_us=%.1f\n",
      options.mode.c_str(), options.callers, static_cast<unsigned long long>(options.requests),
      measurement.seconds, static_cast<double>(options.requests) / measurement.seconds,
      percentile(all, 0.50), percentile(all, 0.99));
  return 0;
}
