// Several names under one callback, asynchronously: two orders on one io_context reserve the
// stock of SKUs they share, listed in opposite orders, with Locker::async_with_locks. Each call
// takes every SKU of its order as one lease, waiting in turn without holding any while it waits
// (so the two never deadlock), and writes each SKU's stock with that SKU's fencing number, which
// the callback's LockContext gives. See docs/with_lock.md, "Several names at once".
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./reserve_order_async
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <string>
#include <vector>

using namespace std::chrono_literals;

leasehold::Command get(const std::string& key) {
  return leasehold::Command{"GET", key};
}

// Takes one unit of each SKU of the order, 50 times, each time under one lease on all of them.
asio::awaitable<void> reserve(leasehold::Locker& locker, std::vector<std::string> skus, int& done) {
  leasehold::Client& redis = locker.client();
  auto take_one_of_each = [&](leasehold::LockContext held) -> asio::awaitable<void> {
    for (const std::string& sku : skus) {
      const std::string key = "stock:" + sku;
      const leasehold::Reply stock = co_await redis.async_process(get(key), asio::use_awaitable);
      const std::string left = std::to_string(std::stoll(stock.str) - 1);
      // The write carries this SKU's fence: a holder overtaken while it stalled is refused.
      co_await redis.async_process(leasehold::fenced_set(key, left, *held.fence(locker, sku)),
                                   asio::use_awaitable);
    }
  };
  for (int i = 0; i < 50; ++i) {
    co_await locker.async_with_locks(
        skus, take_one_of_each,
        {.ttl = 10s, .retry_attempts = leasehold::WithLockOptions::forever});
    ++done;
  }
}

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client setup(url);
    for (const char* sku : {"sku-1", "sku-2", "sku-3"})
      setup.process(leasehold::Command{"SET", std::string("stock:") + sku, "1000"});

    asio::io_context io;
    leasehold::Client redis(io.get_executor(), url);
    leasehold::Locker locker(redis, "sku", leasehold::Fencing::on);
    int first = 0, second = 0, ended = 0;
    bool failed = false;
    const auto on_end = [&](std::exception_ptr error) {
      if (error) {
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          std::cerr << "error: " << e.what() << "\n";
        }
        failed = true;
      }
      if (++ended == 2)
        redis.close();  // nothing left to run: io.run() returns
    };
    asio::co_spawn(io, reserve(locker, {"sku-1", "sku-2", "sku-3"}, first), on_end);
    asio::co_spawn(io, reserve(locker, {"sku-3", "sku-2"}, second), on_end);
    io.run();

    const auto left = [&](const char* sku) {
      return std::stoll(setup.process(get(std::string("stock:") + sku)).str);
    };
    std::cout << "orders reserved: " << first << " + " << second << "; stock left: sku-1 "
              << left("sku-1") << ", sku-2 " << left("sku-2") << ", sku-3 " << left("sku-3")
              << "\n";
    // Every reservation counted once: no SKU was reserved by both at a time.
    return !failed && first == 50 && second == 50 && left("sku-1") == 950 && left("sku-2") == 900 &&
                   left("sku-3") == 900
               ? 0
               : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
