// Several names as one lease: an order reserves the stock of each of its SKUs, and two orders
// that share SKUs — listed in opposite orders — must neither deadlock nor reserve a SKU twice.
// Each takes all its SKUs at once (LockSet), waiting in turn without holding any while it waits,
// and writes each SKU's stock with that SKU's fencing number. See docs/locks.md, "Several names
// at once".
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./reserve_order
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

const auto kStock = leasehold::Lock<std::string>{"sku", 10s}.with_fencing();

// Takes one unit of each SKU of the order, 50 times, under one lease on all of them.
void reserve(const std::string& url, const std::vector<std::string>& skus, int& done) {
  leasehold::Client redis(url);
  const leasehold::LockSet order(kStock, std::span<const std::string>(skus));
  for (int i = 0; i < 50; ++i) {
    auto lease = leasehold::lock_set_until(redis, order, leasehold::Clock::now() + 10s);
    if (!lease)
      return;
    for (std::size_t n = 0; n < order.names().size(); ++n) {
      const std::string key = "stock:" + order.names()[n];
      const long long left = std::stoll(redis.process(leasehold::Command{"GET", key}).str);
      // The write carries this SKU's fence: a holder overtaken while it stalled is refused.
      redis.process(leasehold::fenced_set(key, std::to_string(left - 1), lease->fences()[n]));
    }
    redis.process(lease->release());
    ++done;
  }
}

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client redis(url);
    for (const char* sku : {"sku-1", "sku-2", "sku-3"})
      redis.process(leasehold::Command{"SET", std::string("stock:") + sku, "1000"});
    int first = 0, second = 0;
    std::thread a([&] { reserve(url, {"sku-1", "sku-2", "sku-3"}, first); });
    std::thread b([&] { reserve(url, {"sku-3", "sku-2"}, second); });
    a.join();
    b.join();
    const auto left = [&](const char* sku) {
      return std::stoll(redis.process(leasehold::Command{"GET", std::string("stock:") + sku}).str);
    };
    std::cout << "orders reserved: " << first << " + " << second << "; stock left: sku-1 "
              << left("sku-1") << ", sku-2 " << left("sku-2") << ", sku-3 " << left("sku-3")
              << "\n";
    // Every reservation counted once: no SKU was reserved by both at a time.
    return first == 50 && second == 50 && left("sku-1") == 950 && left("sku-2") == 900 &&
                   left("sku-3") == 900
               ? 0
               : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
