// Two replicas stand for leader of one scheduler with run_elector: one leads, the other waits,
// and each stands again after its term. Here a leader's work takes 50 ms and then resigns, so the
// replicas take turns; after six terms, the replicas are stopped. A real leader works until its
// stop token is requested: when the process shuts down, or the moment its lease is lost.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./standing_for_leader
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

const leasehold::Election<std::string> kSchedulers{"scheduler", 10s};

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  std::mutex print;
  std::vector<std::uint64_t> terms;
  std::stop_source shutdown;
  std::atomic<bool> failed{false};
  std::vector<std::thread> replicas;
  for (int replica = 1; replica <= 2; ++replica) {
    replicas.emplace_back([&, replica] {
      try {
        leasehold::Client redis(url);
        leasehold::ElectorOptions options;
        options.value = "10.0.0." + std::to_string(replica) + ":8080";  // what readers see
        options.deposed = [&](const leasehold::Deposed& deposed) {
          if (deposed.how == leasehold::TermEnd::lost)
            std::cerr << "replica " << replica << " lost term " << deposed.term << "\n";
        };
        leasehold::run_elector(
            redis, kSchedulers, std::string("eu"),
            [&](const leasehold::Term<std::string>& term, std::stop_token stop) {
              {
                std::lock_guard lock(print);
                std::cout << "replica " << replica << " leads term " << term.number << "\n";
                terms.push_back(term.number);
                if (terms.size() == 6)
                  shutdown.request_stop();
              }
              // The leader's work, with its term as its fence; it stops when `stop` says so.
              for (int step = 0; step < 10 && !stop.stop_requested(); ++step)
                std::this_thread::sleep_for(5ms);
            },
            options, shutdown.get_token());
      } catch (const leasehold::Error& e) {
        std::cerr << "standing_for_leader: " << e.what() << "\n";
        failed = true;
        shutdown.request_stop();
      }
    });
  }
  for (auto& replica : replicas)
    replica.join();
  if (failed)
    return 1;
  for (std::size_t i = 1; i < terms.size(); ++i)
    if (terms[i] <= terms[i - 1]) {
      std::cerr << "standing_for_leader: a term did not grow\n";
      return 1;
    }
  std::cout << terms.size() << " terms, one leader at a time, each term larger\n";
  return terms.size() >= 6 ? 0 : 1;
}
