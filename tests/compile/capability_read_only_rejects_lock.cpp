// Must not compile: a read-only handle cannot run a lock query (it writes).
#include <leasehold/capability.hpp>
#include <leasehold/lock.hpp>

using namespace std::chrono_literals;
constexpr leasehold::Lock<std::uint64_t> invoices{"invoice", 30s};

void rejected(leasehold::Client& redis) {
  auto reader = leasehold::narrow<leasehold::ReadOnly>(redis);
  (void)reader.process(invoices.try_lock(1));
}

int main() {}
