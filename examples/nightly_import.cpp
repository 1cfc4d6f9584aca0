// The nightly import: every node starts it, one runs it. The others wait as long as it takes
// (retry_attempts = forever) and then find it done; the run itself lasts far longer than the
// lease's TTL, which with_lock keeps extending.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./nightly_import
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  leasehold::WithLockOptions wait_forever;
  wait_forever.ttl = 300ms;  // short, so a crashed importer blocks the others only briefly
  wait_forever.retry_attempts = leasehold::WithLockOptions::forever;
  wait_forever.retry_delay = 50ms;

  std::atomic<int> imports{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> nodes;
  for (int node = 1; node <= 2; ++node) {
    nodes.emplace_back([&, node] {
      try {
        leasehold::Client redis(url);
        leasehold::Locker locker(redis);
        locker.with_lock(
            "import:nightly",
            [&](std::stop_token stop) {
              if (redis.process(leasehold::Command{"EXISTS", "example:imported"}).integer == 1) {
                std::cout << "node " << node << ": already imported tonight\n";
                return;
              }
              std::cout << "node " << node << ": importing (1 s under a 300 ms lease)\n";
              for (int step = 0; step < 10 && !stop.stop_requested(); ++step)
                std::this_thread::sleep_for(100ms);  // one step of the import
              redis.process(leasehold::Command{"SET", "example:imported", "yes", "EX", "60"});
              ++imports;
            },
            wait_forever);
      } catch (const std::exception& e) {
        std::cerr << "node " << node << ": " << e.what() << "\n";
        ++failures;
      }
    });
  }
  for (auto& node : nodes)
    node.join();
  std::cout << "imports run: " << imports << "\n";
  return imports == 1 && failures == 0 ? 0 : 1;
}
