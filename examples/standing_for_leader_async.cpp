// Two replicas stand for leader of one scheduler on one io_context, with async_run_elector: the
// leader's work is a coroutine, cancelled the moment its lease is lost. Here each term's work
// takes 50 ms and then returns (the elector resigns), so the replicas take turns; after six
// terms the replicas are stopped.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./standing_for_leader_async
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

using namespace std::chrono_literals;

const leasehold::Election<std::string> kSchedulers{"scheduler", 10s};

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  asio::io_context io;
  std::vector<std::uint64_t> terms;  // on the io_context's one thread
  std::stop_source shutdown;
  bool failed = false;
  std::vector<std::unique_ptr<leasehold::Client>> clients;
  try {
    for (int replica = 1; replica <= 2; ++replica) {
      clients.push_back(std::make_unique<leasehold::Client>(url));
      leasehold::ElectorOptions options;
      options.value = "10.0.0." + std::to_string(replica) + ":8080";
      auto lead = [&, replica](const leasehold::Term<std::string>& term,
                               std::stop_token) -> asio::awaitable<void> {
        std::cout << "replica " << replica << " leads term " << term.number << "\n";
        terms.push_back(term.number);
        if (terms.size() == 6)
          shutdown.request_stop();
        // The leader's work: cancelled at this co_await if the lease is lost.
        asio::steady_timer work(co_await asio::this_coro::executor, 50ms);
        co_await work.async_wait(asio::use_awaitable);
      };
      asio::co_spawn(io,
                     leasehold::async_run_elector(*clients.back(), kSchedulers, std::string("eu"),
                                                  lead, options, shutdown.get_token()),
                     [&](std::exception_ptr error) {
                       if (!error)
                         return;
                       failed = true;
                       shutdown.request_stop();
                       try {
                         std::rethrow_exception(error);
                       } catch (const std::exception& e) {
                         std::cerr << "standing_for_leader_async: " << e.what() << "\n";
                       }
                     });
    }
    io.run();
  } catch (const leasehold::Error& e) {
    std::cerr << "standing_for_leader_async: " << e.what() << "\n";
    return 1;
  }
  for (std::size_t i = 1; i < terms.size(); ++i)
    if (terms[i] <= terms[i - 1])
      failed = true;
  std::cout << terms.size() << " terms, each larger than the last\n";
  return failed || terms.size() < 6 ? 1 : 0;
}
