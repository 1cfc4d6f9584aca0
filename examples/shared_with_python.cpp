// Share a lock with services that use other clients: the Python billing service locks
// "invoice:42" with redis-py's Lock (SET invoice:42 <uuid> NX PX 30000). A RawLock takes that
// same key the same way, so the two exclude each other and neither releases the other's lock.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./shared_with_python
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>

using namespace std::chrono_literals;

// Only a TTL: the key is given as other clients name it.
constexpr leasehold::RawLock kInvoiceLocks{30s};

int main() {
  const char* url = std::getenv("LEASEHOLD_REDIS_URL");
  try {
    leasehold::Client redis(url ? url : "redis://127.0.0.1:6379");

    // What redis-py's Lock("invoice:42", timeout=30).acquire() writes, done here by hand.
    const std::string python_value = "6f1c0e3a2b4d11ef9a5e0242ac120002";
    redis.process(leasehold::Command{"SET", "invoice:42", python_value, "NX", "PX", "30000"});

    const bool busy = !redis.process(kInvoiceLocks.try_lock("invoice:42"));
    std::cout << "invoice:42 while Python holds it: " << (busy ? "busy" : "taken!") << "\n";

    // Python releases (its compare-and-delete); a waiter polls, never touching Python's value.
    redis.process(leasehold::Command{"DEL", "invoice:42"});
    auto token = leasehold::lock_for(redis, kInvoiceLocks, "invoice:42", 5s);
    std::cout << "invoice:42 after Python released it: " << (token ? "taken" : "busy") << "\n";

    const bool released = token && redis.process(token->release());

    // with_lock (and Mutex) on raw keys: the name is the key; a busy key is polled every
    // retry_delay.
    leasehold::Locker locker(redis, leasehold::raw_keys);
    const std::string outcome =
        locker.with_lock("invoice:42", [] { return std::string("finalized"); },
                         {.ttl = 30s, .retry_attempts = 50, .retry_delay = 100ms});
    std::cout << "invoice:42 under with_lock: " << outcome << "\n";
    return busy && released ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
