// Three replicas of a scheduler: one leads and runs the schedule, the others campaign and take
// over when it goes. Each leader proclaims its address and works with its term; a reader asks
// who leads. Here each replica leads for 100 ms, then resigns, and the next one takes over at
// once, with a larger term.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./leader_election
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

const leasehold::Election<std::string> kSchedulers{"scheduler", 10s};

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    std::mutex print;
    std::vector<std::uint64_t> terms;
    std::vector<std::thread> replicas;
    for (int replica = 1; replica <= 3; ++replica) {
      replicas.emplace_back([&, replica] {
        leasehold::Client redis(url);
        auto leader = leasehold::wait_for(redis, kSchedulers.campaign("eu"), 10s);
        if (!leader)
          return;  // nobody resigned within 10 s
        const std::string address = "10.0.0." + std::to_string(replica) + ":8080";
        redis.process(kSchedulers.proclaim(*leader, address));
        const auto seen = redis.process(kSchedulers.leader("eu"));  // what any reader sees
        {
          std::lock_guard lock(print);
          const std::uint64_t term = *leader->fence();  // an election's lease is always fenced
          std::cout << "replica " << replica << " leads term " << term << " at "
                    << seen->value.value_or("?") << "\n";
          terms.push_back(term);
        }
        std::this_thread::sleep_for(100ms);  // the leader's work, with its term as its fence
        redis.process(kSchedulers.resign(*leader));  // tells the next campaigner at once
      });
    }
    for (auto& replica : replicas)
      replica.join();
    for (std::size_t i = 1; i < terms.size(); ++i)
      if (terms[i] <= terms[i - 1]) {
        std::cerr << "leader_election: a term did not grow\n";
        return 1;
      }
    if (terms.size() != 3) {
      std::cerr << "leader_election: only " << terms.size() << " of 3 replicas led\n";
      return 1;
    }
    std::cout << "3 replicas led in turn, each with a larger term\n";
    return 0;
  } catch (const leasehold::Error& e) {
    std::cerr << "leader_election: " << e.what() << "\n";
    return 1;
  }
}
