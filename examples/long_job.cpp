// A job that runs far longer than its lease's TTL: while_held extends the lease every third of
// the TTL and stops the job (through its stop token) if the lease is ever lost.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./long_job
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

constexpr leasehold::Lock<std::string> kIndexRebuilds{"index-rebuild", 600ms};

int main() {
  const char* url = std::getenv("LEASEHOLD_REDIS_URL");
  try {
    leasehold::Client redis(url ? url : "redis://127.0.0.1:6379");
    leasehold::Client other_replica(url ? url : "redis://127.0.0.1:6379");
    auto token = redis.process(kIndexRebuilds.try_lock("products"));
    if (!token) {
      std::cout << "another replica is rebuilding the index\n";
      return 0;
    }
    int refused = 0;
    leasehold::Held<int> held = leasehold::while_held(redis, *token, [&](std::stop_token stop) {
      int batches = 0;
      // 2 seconds of work under a 600 ms lease.
      for (; batches < 20 && !stop.stop_requested(); ++batches) {
        std::this_thread::sleep_for(100ms);  // stands for one batch of real work
        if (!other_replica.process(kIndexRebuilds.try_lock("products")))
          ++refused;
      }
      return batches;
    });
    if (!held) {
      std::cout << "lease lost, the rebuild stopped early: " << held.loss_cause().message() << "\n";
      return 1;
    }
    std::cout << "rebuilt " << held.value() << " batches under a 600 ms lease; the other replica"
              << " was refused " << refused << " times\n";
    redis.process(token->release());
    return refused == held.value() ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
