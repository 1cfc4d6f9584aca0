// A node of a test deployment, run as a separate process by the integration tests.
//
// leasehold-test-worker URL NAME ITERATIONS
//   Runs ITERATIONS with_lock calls on NAME (waiting forever), each doing a non-atomic
//   read-sleep-write increment of the Redis key "<NAME>:counter": without mutual exclusion,
//   increments get lost.
// leasehold-test-worker cron URL NAME INTERVAL_MS LEASE_MS DURATION_MS OUTFILE
//   Runs NAME as a once-per-interval cron job (AtLeast) for DURATION_MS; each run appends its
//   CLOCK_MONOTONIC start time in nanoseconds to OUTFILE (comparable across processes).
// leasehold-test-worker wait read|write|permit URL NAME
//   Waits in turn for a reader's or the writer's lease of RwLock<std::string>{"worker", 30s},
//   or for a permit of Semaphore<std::string>{"worker", 1, 30s}, on NAME, for as long as it
//   takes; then prints "granted" and holds it until killed. A test kills it while it waits: a
//   waiter that died in the queue.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

namespace {

int run_cron(char** argv) {
  leasehold::Client redis(argv[2]);
  const std::string name = argv[3];
  const std::chrono::milliseconds interval(std::atoll(argv[4]));
  const std::chrono::milliseconds lease(std::atoll(argv[5]));
  const std::chrono::milliseconds duration(std::atoll(argv[6]));
  const int out = ::open(argv[7], O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (out < 0)
    return 1;
  leasehold::cron::Scheduler scheduler;
  scheduler.add(name, leasehold::cron::AtLeast{interval},
                leasehold::cron::once_per_interval(
                    redis, name, interval,
                    [out] {
                      timespec now{};
                      ::clock_gettime(CLOCK_MONOTONIC, &now);
                      const std::string line =
                          std::to_string(now.tv_sec * 1'000'000'000LL + now.tv_nsec) + "\n";
                      if (::write(out, line.data(), line.size()) < 0)
                        std::abort();
                    },
                    {.lease = lease}));
  auto running = scheduler.start();
  std::this_thread::sleep_for(duration);  // how long this replica lives
  running.shutdown();
  ::close(out);
  return 0;
}

int run_wait(char** argv) {
  leasehold::Client redis(argv[3]);
  const std::string kind = argv[2];
  const std::string name = argv[4];
  const auto forever = leasehold::Clock::time_point::max();
  bool granted = false;
  if (kind == "permit") {
    const leasehold::Semaphore<std::string> permits{"worker", 1, std::chrono::seconds(30)};
    granted = leasehold::wait_until(redis, permits.in_turn(name), forever).has_value();
  } else {
    const leasehold::RwLock<std::string> locks{"worker", std::chrono::seconds(30)};
    granted = kind == "read"
                  ? leasehold::wait_until(redis, locks.read_in_turn(name), forever).has_value()
                  : leasehold::wait_until(redis, locks.write_in_turn(name), forever).has_value();
  }
  std::cout << (granted ? "granted" : "refused") << std::endl;
  for (;;)
    ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "wait") {
    try {
      return run_wait(argv);
    } catch (const std::exception& e) {
      std::cerr << "leasehold-test-worker: " << e.what() << "\n";
      return 1;
    }
  }
  if (argc == 8 && std::string(argv[1]) == "cron") {
    try {
      return run_cron(argv);
    } catch (const std::exception& e) {
      std::cerr << "leasehold-test-worker: " << e.what() << "\n";
      return 1;
    }
  }
  if (argc != 4) {
    std::cerr << "usage: leasehold-test-worker URL NAME ITERATIONS\n"
                 "       leasehold-test-worker cron URL NAME INTERVAL_MS LEASE_MS DURATION_MS "
                 "OUTFILE\n"
                 "       leasehold-test-worker wait read|write|permit URL NAME\n";
    return 64;
  }
  try {
    leasehold::Client redis(argv[1]);
    leasehold::Locker locker(redis);
    const std::string name = argv[2];
    const std::string counter = name + ":counter";
    const int iterations = std::atoi(argv[3]);
    leasehold::WithLockOptions options;
    options.retry_attempts = leasehold::WithLockOptions::forever;
    options.retry_delay = std::chrono::milliseconds(1);
    for (int i = 0; i < iterations; ++i) {
      locker.with_lock(
          name,
          [&] {
            const auto value = redis.process(leasehold::Command{"GET", counter});
            const long long current = value.is_nil() ? 0 : std::stoll(value.str);
            std::this_thread::sleep_for(std::chrono::microseconds(500));  // widens the race window
            redis.process(leasehold::Command{"SET", counter, std::to_string(current + 1)});
          },
          options);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-worker: " << e.what() << "\n";
    return 1;
  }
}
