// One node at a time: three "nodes" (threads with connections of their own) all want to rebuild
// the same report; with_lock runs the rebuilds one after another, never two at once.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./rebuild_report
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> nodes;
  for (int node = 1; node <= 3; ++node) {
    nodes.emplace_back([&, node] {
      try {
        leasehold::Client redis(url);
        leasehold::Locker locker(redis);
        locker.with_lock("report:monthly", [&] {
          if (++inside > 1)
            ++overlaps;
          std::cout << "node " << node << " rebuilds the report\n" << std::flush;
          std::this_thread::sleep_for(150ms);  // the rebuild
          --inside;
        });
      } catch (const std::exception& e) {
        std::cerr << "node " << node << ": " << e.what() << "\n";
        ++failures;
      }
    });
  }
  for (auto& node : nodes)
    node.join();
  std::cout << "three rebuilds, " << overlaps << " of them overlapping\n";
  return overlaps == 0 && failures == 0 ? 0 : 1;
}
