// One pipelined connection, used three ways: a blocking call, a batch in one round trip, and many
// coroutines sharing the connection.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./connection
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    // A client with its own I/O thread: blocking calls from any thread.
    leasehold::Client redis(url);
    redis.connect();  // fails fast, with a clear message, if Redis is unreachable
    std::cout << "connected to " << redis.url().to_string() << "\n";
    std::cout << "PING -> " << to_string(redis.process(leasehold::Command{"PING"})) << "\n";

    // A batch: five queries in one round trip, each with its own outcome.
    std::vector<leasehold::Command> batch;
    for (int i = 0; i < 5; ++i)
      batch.push_back(leasehold::Command{"INCR", "example:counter"});
    for (const auto& result : redis.process(batch))
      std::cout << "INCR -> " << to_string(result.value()) << "\n";
    redis.process(leasehold::Command{"DEL", "example:counter"});

    // A client on your own io_context: coroutines share its one connection.
    asio::io_context io;
    leasehold::Client shared(io.get_executor(), url);
    int done = 0;
    for (int worker = 0; worker < 3; ++worker) {
      asio::co_spawn(
          io,
          [&, worker]() -> asio::awaitable<void> {
            const leasehold::Command echo{"ECHO", "hello from coroutine " + std::to_string(worker)};
            leasehold::Reply reply = co_await shared.async_process(echo, asio::use_awaitable);
            std::cout << reply.str << "\n";
            if (++done == 3)
              shared.close();  // nothing left to do: let io.run() return
          },
          [](std::exception_ptr e) {
            if (e)
              std::rethrow_exception(e);
          });
    }
    io.run();
    return done == 3 ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
