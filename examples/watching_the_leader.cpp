// A router watches who leads the scheduler and sends work to its proclaimed address, told at
// once of each change instead of asking again and again. Here two terms come and go (each
// leader proclaims its address, then resigns) while the router prints what it is told.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./watching_the_leader
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <optional>
#include <set>
#include <string>

using namespace std::chrono_literals;

const leasehold::Election<std::string> kSchedulers{"scheduler", 10s};

// One line for what the router is told.
void show(const std::optional<leasehold::Leader>& leader) {
  if (!leader)
    std::cout << "router: nobody leads; holding work back\n";
  else
    std::cout << "router: term " << leader->term << ", sending work to "
              << leader->value.value_or("(no address yet)") << "\n";
}

int main() {
  const char* env = std::getenv("LEASEHOLD_REDIS_URL");
  const std::string url = env ? env : "redis://127.0.0.1:6379";
  try {
    leasehold::Client redis(url);
    leasehold::Watch leaders(redis, kSchedulers.observe("eu"));
    show(*leaders.next());  // at once: who leads now

    std::set<std::uint64_t> seen_with_address;
    for (const char* address : {"10.0.0.1:8080", "10.0.0.2:8080"}) {
      auto leader = leasehold::wait_for(redis, kSchedulers.campaign("eu"), 5s);
      if (!leader)
        return 1;
      redis.process(kSchedulers.proclaim(*leader, address));
      // The router is told of the new leader, then of its address.
      for (auto now = leaders.next(leasehold::Clock::now() + 5s); now;
           now = leaders.next(leasehold::Clock::now() + 5s)) {
        show(*now);
        if (*now && (*now)->value == address) {
          seen_with_address.insert((*now)->term);
          break;
        }
      }
      redis.process(kSchedulers.resign(*leader));
      if (auto now = leaders.next(leasehold::Clock::now() + 5s))  // nobody, until the next
        show(*now);
    }
    std::cout << "the router followed " << seen_with_address.size() << " terms as they came\n";
    return seen_with_address.size() == 2 ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "watching_the_leader: " << e.what() << "\n";
    return 1;
  }
}
