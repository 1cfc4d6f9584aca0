// Don't process the same request twice at once: retry_attempts = 0 turns a busy lock into a
// "429 Too Many Requests" answer at once; an error thrown by the task itself passes through as is.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./do_not_repeat_process
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <stdexcept>

using namespace std::chrono_literals;

struct PaymentDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An HTTP-ish handler: the status code it would answer with.
int handle(leasehold::Locker& locker, const std::string& request_id, bool declined) {
  try {
    locker.with_lock("process:" + request_id,
                     [&] {
                       if (declined)
                         throw PaymentDeclined("card declined");
                       // ... process the request
                     },
                     {.retry_attempts = 0});
    return 200;
  } catch (const leasehold::AcquireError&) {
    return 429;  // the same request is being processed right now
  } catch (const PaymentDeclined& e) {
    std::cout << "  the task's own error passed through: " << e.what() << "\n";
    return 402;
  }
}

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client redis(url);
    leasehold::Locker locker(redis);
    int busy = 0;
    // A first delivery of request r-1 is being processed...
    locker.with_lock("process:r-1", [&] {
      // ...when a duplicate delivery arrives.
      busy = handle(locker, "r-1", false);  // reentrant on this thread: see below
    });
    std::cout << "duplicate on the same call chain: " << busy << " (reentrant, runs)\n";

    leasehold::Client other_node(url);
    leasehold::Locker other(other_node);
    int duplicate = 0;
    locker.with_lock("process:r-2", [&] { duplicate = handle(other, "r-2", false); });
    std::cout << "duplicate from another node: " << duplicate << "\n";
    const int declined = handle(locker, "r-3", true);
    std::cout << "a declined payment: " << declined << "\n";
    const int fine = handle(locker, "r-4", false);
    std::cout << "a fresh request: " << fine << "\n";
    return (busy == 200 && duplicate == 429 && declined == 402 && fine == 200) ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
