// The seed's HourlyReport: every replica schedules it; across the deployment it runs at most once
// per hour. Each tick takes a 55-minute lease and never releases it, so a replica whose clock is
// offset finds the hour taken and skips it.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./hourly_report [--interval-ms 400] [--ticks 5]
//
// The interval is shortened by a flag so that CI runs it in seconds; the lease stays 55/60 of it.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

class HourlyReport {
 public:
  explicit HourlyReport(leasehold::Client& redis, int replica) : redis_(redis), replica_(replica) {}

  std::error_code operator()(const leasehold::cron::Tick& tick) {
    std::cout << "replica " << replica_ << " sends the report (its run " << tick.run << ")\n"
              << std::flush;
    redis_.process(leasehold::Command{"INCR", "example:reports-sent"});
    return {};
  }

 private:
  leasehold::Client& redis_;
  int replica_;
};

int main(int argc, char** argv) {
  std::chrono::milliseconds interval = 1h;
  int ticks = 0;  // 0: run until killed
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--interval-ms") == 0)
      interval = std::chrono::milliseconds(std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--ticks") == 0)
      ticks = std::atoi(argv[i + 1]);
  }
  const auto lease = interval * 55 / 60;  // 55 minutes of every hour
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client admin(url);
    admin.process(leasehold::Command{"DEL", "example:reports-sent"});
    // Three replicas, started at different moments, each with its own schedule.
    std::vector<std::thread> replicas;
    for (int replica = 1; replica <= 3; ++replica) {
      replicas.emplace_back([&, replica] {
        std::this_thread::sleep_for(interval * (replica - 1) / 4);  // offset start
        leasehold::Client redis(url);
        leasehold::cron::Scheduler scheduler;
        scheduler.add(
            "hourly-report", leasehold::cron::AtLeast{interval},
            leasehold::cron::once_per_interval(redis, "hourly-report", interval,
                                               HourlyReport(redis, replica), {.lease = lease}));
        auto running = scheduler.start();
        std::this_thread::sleep_for(interval * (ticks > 0 ? ticks : 1'000'000));
        running.shutdown();
      });
    }
    for (auto& replica : replicas)
      replica.join();
    const auto sent = admin.process(leasehold::Command{"GET", "example:reports-sent"});
    std::cout << "reports sent: " << sent.str << " in " << ticks << " intervals, by 3 replicas\n";
    const int count = std::atoi(sent.str.c_str());
    return (count >= ticks - 1 && count <= ticks + 1) ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
