// An operator's dashboard watches who holds an invoice's lock, told of each change at once by
// Redis's tracking of the key, whoever makes it: here a worker takes the lock and releases it,
// then another client (not leasehold) sets the key, and the key expires.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./watching_a_lock
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <optional>
#include <string>

using namespace std::chrono_literals;

const leasehold::Lock<std::string> kInvoices{"invoice", 30s};

// One line for what the dashboard is told; false if nothing came within 5 s.
bool show_next(leasehold::Watch<std::optional<leasehold::LeaseInfo>>& holders) {
  const auto now = holders.next(leasehold::Clock::now() + 5s);
  if (!now)
    return false;
  if (!*now)
    std::cout << "dashboard: invoice 42 is free\n";
  else if ((*now)->holder)
    std::cout << "dashboard: held by pid " << (*now)->holder->pid << " on " << (*now)->holder->host
              << " (lease " << (*now)->id_prefix << ")\n";
  else
    std::cout << "dashboard: held by a client that is not leasehold\n";
  return true;
}

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client dashboard(url);
    leasehold::Client worker(url);
    leasehold::Watch holders(dashboard, kInvoices.observe("42"));
    bool told = show_next(holders);  // at once: free

    auto token = worker.process(kInvoices.try_lock("42"));
    told = told && token && show_next(holders);
    told = told && worker.process(token->release()) && show_next(holders);

    // Another program's SET NX PX, as redis-py's or node-redlock's lock would do.
    worker.process(leasehold::Command{"SET", kInvoices.key("42"), "another-client", "PX", "300"});
    told = told && show_next(holders) && show_next(holders);  // held, then expired
    std::cout << (told ? "the dashboard was told each change\n" : "a change went untold\n");
    return told ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "watching_a_lock: " << e.what() << "\n";
    return 1;
  }
}
