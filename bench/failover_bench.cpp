// leasehold-failover: how long a failover behind Redis Sentinel keeps leases from being granted,
// and how much of that is the client's. bench/run-failover runs it against a private master, two
// replicas and three sentinels (see docs/performance.md, "Failover behind Sentinel").
//
//   leasehold-failover --redis redis-sentinel://H:P,.../NAME --rounds N --cause failover|kill
//                      [--replicas R]
//
// A worker takes a fresh lock every millisecond through the Sentinel URL and never releases it:
// afterwards, each grant's key says which server granted it. Each round notes t0, then asks the
// sentinels to fail the master over (SENTINEL FAILOVER) or SIGKILLs it, and notes when the first
// sentinel names another master (t_named). The first grant made after t_named whose key is on the
// new master (so it granted it: it no longer replicates the old one) ends the round's outage
// (t_granted). Per round: sentinels = t_named - t0, outage =
// t_granted - t0, client = t_granted - t_named. A killed master is started again (its executable
// and config file, from INFO), and each round first waits until every sentinel names the same
// master and that master has all its replicas.
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <leasehold/leasehold.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string url;
  std::uint64_t rounds = 10;
  bool kill = false;
  std::uint64_t replicas = 2;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "leasehold-failover: %s\nusage: leasehold-failover --redis redis-sentinel://... "
               "[--rounds N] [--cause failover|kill] [--replicas R]\n",
               why);
  std::exit(64);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage((arg + " wants a value").c_str());
      return argv[++i];
    };
    if (arg == "--redis") {
      options.url = value();
    } else if (arg == "--rounds") {
      options.rounds = leasehold::bench::parse_number(arg, value(), usage);
    } else if (arg == "--replicas") {
      options.replicas = leasehold::bench::parse_number(arg, value(), usage);
    } else if (arg == "--cause") {
      const std::string cause = value();
      if (cause != "failover" && cause != "kill")
        usage("--cause is failover or kill");
      options.kill = cause == "kill";
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.url.empty() || options.rounds == 0)
    usage("--redis URL (a redis-sentinel:// one) and a positive --rounds are required");
  return options;
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// Polls `done` every 2 ms until it holds; throws after `timeout`.
template <class Done>
void wait_until(Done done, std::chrono::seconds timeout, const char* what) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline)
      throw std::runtime_error(std::string("timed out waiting until ") + what);
    std::this_thread::sleep_for(2ms);  // polling against a deadline
  }
}

// A lock every millisecond through the Sentinel URL, each kept (never released) with when it was
// granted.
class Worker {
 public:
  struct Grant {
    Clock::time_point at;
    std::string key;
  };

  explicit Worker(const std::string& url) : client_(url), thread_([this] { run(); }) {}
  ~Worker() {
    stop_ = true;
    thread_.join();
  }

  // The grants made after `since`, in order.
  std::vector<Grant> grants_after(Clock::time_point since) {
    const std::lock_guard lock(mutex_);
    std::vector<Grant> after;
    for (const Grant& grant : grants_)
      if (grant.at > since)
        after.push_back(grant);
    return after;
  }

 private:
  void run() {
    const leasehold::Lock<std::string> locks("failover", 60s);
    for (std::uint64_t n = 0; !stop_; ++n) {
      const std::string name = std::to_string(::getpid()) + ":" + std::to_string(n);
      try {
        if (client_.process(locks.try_lock(name))) {
          const std::lock_guard lock(mutex_);
          grants_.push_back({Clock::now(), locks.key(name)});
        }
      } catch (const leasehold::Error&) {
        // no master yet, a demoted one, a lost connection: the outage being measured
      }
      std::this_thread::sleep_for(1ms);  // the worker's pace
    }
  }

  leasehold::Client client_;
  std::mutex mutex_;
  std::vector<Grant> grants_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One sentinel's client and what it is asked.
struct Sentinels {
  std::vector<std::unique_ptr<leasehold::Client>> clients;
  std::string name;

  explicit Sentinels(const leasehold::RedisUrl& url) : name(url.master_name) {
    leasehold::ClientOptions options;
    options.warn_on_eviction_policy = false;
    for (const auto& seed : url.seeds)
      clients.push_back(std::make_unique<leasehold::Client>("redis://" + seed.address(), options));
  }

  // "host:port" of the master sentinel `i` names.
  std::string master(std::size_t i = 0) const {
    const leasehold::Reply reply =
        clients.at(i)->process(leasehold::Command{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name});
    return reply.elements.size() == 2 ? reply.elements[0].str + ":" + reply.elements[1].str : "";
  }

  bool agree_on(const std::string& master_address) const {
    for (std::size_t i = 0; i < clients.size(); ++i)
      if (master(i) != master_address)
        return false;
    return true;
  }
};

// Waits until every sentinel names one master that has `replicas` replicas; its address.
std::string wait_stable(const Sentinels& sentinels, std::uint64_t replicas) {
  std::string master;
  wait_until(
      [&] {
        try {
          master = sentinels.master();
          if (master.empty() || !sentinels.agree_on(master))
            return false;
          leasehold::Client server("redis://" + master);
          const leasehold::Reply role = server.process(leasehold::Command{"ROLE"});
          return role.elements.size() == 3 && role.elements[0].str == "master" &&
                 role.elements[2].elements.size() == replicas;
        } catch (const leasehold::Error&) {
          return false;
        }
      },
      120s, "every sentinel names one master with all its replicas");
  return master;
}

// SIGKILLs the server at `address` and returns how to start it again: its executable and config.
std::vector<std::string> kill_server(const std::string& address) {
  leasehold::Client server("redis://" + address);
  const std::string info = server.process(leasehold::Command{"INFO", "server"}).str;
  const auto field = [&info](const std::string& key) {
    const auto at = info.find(key + ":");
    if (at == std::string::npos)
      throw std::runtime_error("INFO server has no " + key);
    const auto end = info.find_first_of("\r\n", at);
    return info.substr(at + key.size() + 1, end - at - key.size() - 1);
  };
  const pid_t pid = static_cast<pid_t>(std::stol(field("process_id")));
  const std::vector<std::string> restart = {field("executable"), field("config_file")};
  if (::kill(pid, SIGKILL) != 0)
    throw std::runtime_error("could not SIGKILL the master (pid " + std::to_string(pid) + ")");
  return restart;
}

// Starts the server killed at `address` again and waits until it answers (its pid file written:
// bench/run-failover stops it by that, with the others).
void start_server(const std::vector<std::string>& command, const std::string& address) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::setsid();
    // Not this program's output: whoever reads it to its end would wait for the server too.
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd <= 2; ++fd)
      ::dup2(null, fd);
    ::execl(command[0].c_str(), command[0].c_str(), command[1].c_str(), nullptr);
    std::_Exit(127);
  }
  if (child < 0)
    throw std::runtime_error("could not start " + command[0]);
  leasehold::Client server("redis://" + address);
  wait_until(
      [&] {
        try {
          return server.process(leasehold::Command{"PING"}).str == "PONG";
        } catch (const leasehold::Error&) {
          return false;
        }
      },
      30s, "the killed master answers again");
}

struct Round {
  double sentinels_ms = 0;
  double outage_ms = 0;
  double client_ms = 0;
};

Round run_round(const Options& options, const Sentinels& sentinels, Worker& worker) {
  const std::string old_master = wait_stable(sentinels, options.replicas);
  std::vector<std::string> restart;
  Clock::time_point t0;
  if (options.kill) {
    t0 = Clock::now();
    restart = kill_server(old_master);
  } else {
    // A sentinel that has not heard from a replica lately finds no good one (NOGOODSLAVE).
    wait_until(
        [&] {
          try {
            t0 = Clock::now();
            sentinels.clients[0]->process(
                leasehold::Command{"SENTINEL", "FAILOVER", sentinels.name});
            return true;
          } catch (const leasehold::Error&) {
            return false;
          }
        },
        30s, "SENTINEL FAILOVER is accepted");
  }
  std::string new_master;
  wait_until(
      [&] {
        try {
          new_master = sentinels.master();
        } catch (const leasehold::Error&) {
        }
        return !new_master.empty() && new_master != old_master;
      },
      120s, "a sentinel names another master");
  const Clock::time_point named = Clock::now();
  // The first grant after the switch that the new master holds: it granted it (what the old
  // master granted before it was promoted reached it too, but nothing after).
  leasehold::Client promoted("redis://" + new_master);
  Clock::time_point granted;
  std::size_t checked = 0;
  wait_until(
      [&] {
        const auto grants = worker.grants_after(named);
        for (; checked < grants.size(); ++checked) {
          if (promoted.process(leasehold::Command{"EXISTS", grants[checked].key}).integer == 1) {
            granted = grants[checked].at;
            return true;
          }
        }
        return false;
      },
      60s, "a lease is granted on the new master");
  if (!restart.empty())
    start_server(restart, old_master);
  return {ms_between(t0, named), ms_between(t0, granted), ms_between(named, granted)};
}

void summarize(const char* what, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::printf("%s p50_ms=%.1f max_ms=%.1f\n", what, values[values.size() / 2], values.back());
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    const leasehold::RedisUrl url = leasehold::RedisUrl::parse(options.url);
    if (url.transport != leasehold::RedisUrl::Transport::sentinel)
      usage("--redis must be a redis-sentinel:// URL");
    const Sentinels sentinels(url);
    Worker worker(options.url);
    std::vector<double> sentinel_ms, outage_ms, client_ms;
    for (std::uint64_t r = 0; r < options.rounds; ++r) {
      const Round round = run_round(options, sentinels, worker);
      std::printf("round %llu: sentinels_ms=%.1f outage_ms=%.1f client_ms=%.1f\n",
                  static_cast<unsigned long long>(r + 1), round.sentinels_ms, round.outage_ms,
                  round.client_ms);
      std::fflush(stdout);
      sentinel_ms.push_back(round.sentinels_ms);
      outage_ms.push_back(round.outage_ms);
      client_ms.push_back(round.client_ms);
    }
    std::printf("cause=%s rounds=%llu\n", options.kill ? "kill" : "failover",
                static_cast<unsigned long long>(options.rounds));
    summarize("sentinels (t0 to another master named)", sentinel_ms);
    summarize("outage (t0 to a lease granted on the new master)", outage_ms);
    summarize("client (another master named to a lease granted there)", client_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "leasehold-failover: %s\n", e.what());
    return 1;
  }
  return 0;
}
