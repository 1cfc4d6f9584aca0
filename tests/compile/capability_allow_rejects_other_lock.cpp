// Must not compile: a capability for Lock<std::uint64_t> does not allow a Lock<std::string>.
#include <leasehold/capability.hpp>
#include <leasehold/lock.hpp>

using namespace std::chrono_literals;
constexpr leasehold::Lock<std::string> reports{"report", 10s};

void rejected(leasehold::Client& redis) {
  using InvoiceLocks = leasehold::Allow<leasehold::Write<leasehold::Lock<std::uint64_t>>>;
  auto invoicing = leasehold::narrow<InvoiceLocks>(redis);
  (void)invoicing.process(reports.try_lock("daily"));
}

int main() {}
