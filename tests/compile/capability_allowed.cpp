// Must compile: what each capability allows.
#include <leasehold/capability.hpp>
#include <leasehold/lock.hpp>

using namespace std::chrono_literals;

constexpr leasehold::Lock<std::uint64_t> invoices{"invoice", 30s};
constexpr leasehold::Lock<std::string> reports{"report", 10s};

void allowed(leasehold::Client& redis) {
  auto all = leasehold::narrow<leasehold::ReadWrite>(redis);
  (void)all.process(invoices.try_lock(1));
  (void)all.process(reports.try_lock("daily"));

  using InvoiceLocks = leasehold::Allow<leasehold::Write<leasehold::Lock<std::uint64_t>>>;
  auto invoicing = leasehold::narrow<InvoiceLocks>(redis);
  if (auto token = invoicing.process(invoices.try_lock(7))) {
    (void)invoicing.process(token->extend());
    (void)invoicing.process(token->release());
  }
}

int main() {}
