// Readers of the catalog: several exports run together, each with a reader lease of its own;
// a reprice (the writer, examples/reprice.cpp) waits until they are done.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./export
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>

using namespace std::chrono_literals;

constexpr leasehold::RwLock<std::string> kCatalog{"catalog", 10s};

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client redis(url);
    auto nightly = redis.process(kCatalog.try_read("books"));
    auto partner = redis.process(kCatalog.try_read("books"));
    std::cout << "two exports read the catalog together: " << std::boolalpha << (nightly && partner)
              << "\n";

    auto reprice = redis.process(kCatalog.try_write("books"));
    std::cout << "a reprice meanwhile: "
              << (reprice ? "got in (wrong!)" : "refused, readers inside") << "\n";

    redis.process(nightly->release());
    std::cout << "one export done; the other still holds its own lease: "
              << redis.process(partner->extend()) << "\n";
    redis.process(partner->release());
    auto after = redis.process(kCatalog.try_write("books"));
    std::cout << "both done; the reprice gets in: " << after.has_value() << "\n";
    if (after)
      redis.process(after->release());
    return (nightly && partner && !reprice && after) ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
