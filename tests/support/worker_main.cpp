// leasehold-test-worker URL NAME ITERATIONS: a node of a test deployment. Runs ITERATIONS
// with_lock calls on NAME (waiting forever), each doing a non-atomic read-sleep-write increment
// of the Redis key "<NAME>:counter": without mutual exclusion, increments get lost.
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: leasehold-test-worker URL NAME ITERATIONS\n";
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
