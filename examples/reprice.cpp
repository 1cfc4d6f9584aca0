// The writer of the catalog: a reprice excludes every export and every other reprice. With
// writer preference, a reprice that finds readers registers its intent, and new exports are
// refused until it got in, so a steady stream of exports cannot starve it.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./reprice
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

constexpr auto kCatalog =
    leasehold::RwLock<std::string>{"catalog", 10s}.with_writer_preference(200ms);

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client redis(url);
    auto running_export = redis.process(kCatalog.try_read("books"));

    // The reprice finds a reader: refused, and its intent is registered.
    auto first_try = redis.process(kCatalog.try_write("books"));
    std::cout << "reprice while an export runs: " << (first_try ? "got in (wrong!)" : "refused")
              << "\n";
    auto late_export = redis.process(kCatalog.try_read("books"));
    std::cout << "a new export while the reprice waits: "
              << (late_export ? "got in" : "refused (writer preference)") << "\n";

    redis.process(running_export->release());
    std::optional<leasehold::LockToken<leasehold::RwLock<std::string>>> writer;
    for (int attempt = 0; attempt < 100 && !writer; ++attempt) {
      writer = redis.process(kCatalog.try_write("books"));
      if (!writer)
        std::this_thread::sleep_for(10ms);  // retry well within the intent's 200 ms
    }
    std::cout << "the export finished; the reprice " << (writer ? "runs" : "never ran") << "\n";
    if (writer)
      redis.process(writer->release());
    return (!first_try && !late_export && writer) ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
