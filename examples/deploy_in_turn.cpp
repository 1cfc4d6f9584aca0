// Deploy one host at a time, in the order the hosts asked: each waits in turn with lock_for,
// told of the release before it, instead of polling. A host that cannot get the lock within its
// budget skips the deploy (here, none: they take 50 ms each).
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./deploy_in_turn
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

constexpr leasehold::Lock<std::string> kDeploys{"deploy", 30s};

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    std::mutex print;
    std::vector<std::string> order;
    std::vector<std::thread> hosts;
    for (int host = 1; host <= 4; ++host) {
      hosts.emplace_back([&, host] {
        leasehold::Client redis(url);  // each host has its own connection
        auto token = leasehold::lock_for(redis, kDeploys, std::string("web"), 10s);
        if (!token) {
          std::lock_guard lock(print);
          std::cout << "host " << host << ": still busy after 10 s, skipping\n";
          return;
        }
        {
          std::lock_guard lock(print);
          std::cout << "host " << host << ": deploying\n";
          order.push_back("host " + std::to_string(host));
        }
        std::this_thread::sleep_for(50ms);  // the deploy itself
        redis.process(token->release());    // tells the next host in line
      });
      std::this_thread::sleep_for(20ms);  // the hosts ask one after the other
    }
    for (auto& host : hosts)
      host.join();
    if (order.size() != 4) {
      std::cerr << "deploy_in_turn: only " << order.size() << " of 4 hosts deployed\n";
      return 1;
    }
    std::cout << "all 4 hosts deployed, one at a time\n";
    return 0;
  } catch (const leasehold::Error& e) {
    std::cerr << "deploy_in_turn: " << e.what() << "\n";
    return 1;
  }
}
