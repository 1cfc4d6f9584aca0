// Finalize an invoice at most once at a time across every replica: try_lock never waits; the
// caller decides what "busy" means (here: another replica is on it, skip).
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./finalize_invoice
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>

using namespace std::chrono_literals;

// A namespace and a TTL, checked at compile time.
constexpr leasehold::Lock<std::uint64_t> kInvoices{"invoice", 30s};

bool finalize(leasehold::Client& redis, std::uint64_t invoice_id) {
  auto token = redis.process(kInvoices.try_lock(invoice_id));
  if (!token) {
    std::cout << "invoice " << invoice_id << ": busy, another replica is finalizing it\n";
    return false;
  }
  std::cout << "invoice " << invoice_id << ": locked (" << *token << "), valid for "
            << std::chrono::duration_cast<std::chrono::milliseconds>(token->valid_for()).count()
            << " ms\n";
  // ... the work: it must end well before token->deadline() (see while_held for longer work).
  const bool released = redis.process(token->release());
  std::cout << "invoice " << invoice_id << ": finalized, released=" << std::boolalpha << released
            << "\n";
  return true;
}

int main() {
  const char* url = std::getenv("LEASEHOLD_REDIS_URL");
  try {
    leasehold::Client replica_a(url ? url : "redis://127.0.0.1:6379");
    leasehold::Client replica_b(url ? url : "redis://127.0.0.1:6379");

    // Replica A holds invoice 42 while replica B tries it too.
    auto held_by_a = replica_a.process(kInvoices.try_lock(42));
    const bool b_got_it = finalize(replica_b, 42);
    replica_a.process(held_by_a->release());
    const bool b_after = finalize(replica_b, 42);
    return (held_by_a && !b_got_it && b_after) ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
