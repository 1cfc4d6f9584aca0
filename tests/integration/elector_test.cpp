// run_elector against a real redis-server: two electors of one name never lead at once and take
// turns with strictly increasing terms; a leader forced out has its work stopped and stands again;
// a stopped elector resigns and leaves no place behind; without rejoin it leads once; the value
// is proclaimed in each term.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class ElectorTest : public testing::SharedServerTest {
 protected:
  bool nobody_waits() const {
    return server_->command({"ZCARD", detail::queue_key(elections_.key(name_))}).integer == 0;
  }
  bool nobody_leads() { return !redis_.process(elections_.leader(name_)); }

  std::string name_ = "el" + std::to_string(unique_number());
  Election<std::string> elections_{"scheduler", 2s};
  Client redis_{server_->unix_url()};
};

// What electors told of their terms, in order.
struct TermLog {
  struct Entry {
    int elector;
    std::uint64_t term;
  };
  std::mutex mutex;
  std::vector<Entry> begun;  // in the order the terms began
  std::vector<TermEnd> ends;
  std::atomic<int> leading{0};
  std::atomic<int> most_leading{0};
  std::atomic<int> terms{0};

  void begin(int elector, std::uint64_t term) {
    const int now = ++leading;
    for (int most = most_leading; now > most && !most_leading.compare_exchange_weak(most, now);) {
    }
    std::lock_guard lock(mutex);
    begun.push_back({elector, term});
    ++terms;
  }
  void end(const Deposed& deposed) {
    std::lock_guard lock(mutex);
    ends.push_back(deposed.how);
  }
};

// Two electors of one name, each resigning after a short term: they take turns, one at a time,
// each term larger than the last; stopping them ends them with nobody leading or waiting.
TEST_F(ElectorTest, TwoElectorsTakeTurnsOneAtATimeWithIncreasingTerms) {
  TermLog log;
  std::stop_source stop;
  std::vector<std::thread> electors;
  for (int e = 0; e < 2; ++e) {
    electors.emplace_back([&, e] {
      Client client(server_->unix_url());
      ElectorOptions options;
      options.deposed = [&](const Deposed& deposed) { log.end(deposed); };
      run_elector(
          client, elections_, name_,
          [&](const Term<std::string>& term, std::stop_token) {
            log.begin(e, term.number);
            EXPECT_EQ(term.leader.fence(), term.number);
            std::this_thread::sleep_for(20ms);  // the work of a term
            --log.leading;
          },
          options, stop.get_token());
    });
  }
  ASSERT_TRUE(eventually([&] { return log.terms >= 10; }, 10s));
  stop.request_stop();
  for (auto& elector : electors)
    elector.join();
  EXPECT_EQ(log.most_leading.load(), 1) << "never two leaders at once";
  std::lock_guard lock(log.mutex);
  ASSERT_GE(log.begun.size(), 10u);
  EXPECT_EQ(log.ends.size(), log.begun.size()) << "every term is told as it ends";
  std::set<int> who;
  for (std::size_t i = 0; i < log.begun.size(); ++i) {
    who.insert(log.begun[i].elector);
    if (i > 0) {
      EXPECT_GT(log.begun[i].term, log.begun[i - 1].term) << "terms strictly increase";
    }
  }
  for (const TermEnd how : log.ends)
    EXPECT_NE(how, TermEnd::lost);
  EXPECT_EQ(who.size(), 2u) << "both led: a resign hands the leadership to the one waiting";
  EXPECT_TRUE(nobody_leads());
  EXPECT_TRUE(nobody_waits());
}

// A leader forced out (an operator's release --force) has its work's stop token requested at its
// next extension, is told it lost, and stands again: it leads again with a larger term.
TEST_F(ElectorTest, ALeaderForcedOutIsStoppedAndStandsAgain) {
  std::stop_source stop;
  std::vector<std::uint64_t> terms;
  std::vector<Deposed> deposed;
  std::atomic<bool> forced{false};
  std::thread elector([&] {
    ElectorOptions options;
    options.deposed = [&](const Deposed& d) { deposed.push_back(d); };
    run_elector(
        redis_, elections_, name_,
        [&](const Term<std::string>& term, std::stop_token work_stop) {
          terms.push_back(term.number);
          if (terms.size() == 2) {
            stop.request_stop();
            return;
          }
          forced = true;
          const auto started = Clock::now();
          while (!work_stop.stop_requested() && Clock::now() - started < 5s)
            std::this_thread::sleep_for(5ms);
          EXPECT_TRUE(work_stop.stop_requested()) << "the work is stopped when the lease is lost";
        },
        options, stop.get_token());
  });
  ASSERT_TRUE(eventually([&] { return forced.load(); }));
  EXPECT_EQ(redis_.process(elections_.force_release(name_)), 1);
  elector.join();
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_GT(terms[1], terms[0]);
  ASSERT_EQ(deposed.size(), 2u);
  EXPECT_EQ(deposed[0].how, TermEnd::lost);
  EXPECT_EQ(deposed[0].term, terms[0]);
  EXPECT_FALSE(deposed[0].cause) << "taken over, not a Redis error";
  EXPECT_EQ(deposed[1].how, TermEnd::stopped);
  EXPECT_TRUE(nobody_leads());
}

// leader_changed tells who leads when the elector starts (another), then each change it sees:
// nobody once the other resigns (unless this elector, told of the resign, took over before the
// watch read who leads: a hand-off can be quicker than the watch), then this elector, with its
// value.
TEST_F(ElectorTest, LeaderChangedTellsAnotherLeaderThenThisOne) {
  auto other = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(other);
  std::mutex mutex;
  std::vector<std::optional<Leader>> told;
  const auto last = [&] {
    const std::lock_guard lock(mutex);
    return told.empty() ? std::optional<Leader>() : told.back();
  };
  std::thread elector([&] {
    Client client(server_->unix_url());
    ElectorOptions options;
    options.rejoin = false;
    options.value = "mine";
    options.leader_changed = [&](const std::optional<Leader>& now) {
      const std::lock_guard lock(mutex);
      told.push_back(now);
    };
    run_elector(
        client, elections_, name_,
        [&](const Term<std::string>& term, std::stop_token) {
          // Told of itself, with its value, while it leads.
          EXPECT_TRUE(eventually([&] {
            const auto now = last();
            return now && now->term == term.number && now->value == "mine";
          }));
        },
        options);
  });
  ASSERT_TRUE(eventually([&] {
    const auto now = last();
    return now && now->term == other->fence();
  })) << "told of the other leader first";
  ASSERT_TRUE(redis_.process(elections_.resign(*other)));
  elector.join();
  const std::lock_guard lock(mutex);
  ASSERT_GE(told.size(), 2u);
  ASSERT_TRUE(told[0]);
  EXPECT_EQ(told[0]->term, other->fence());
  const std::size_t next = told[1] ? 1 : 2;  // past the moment nobody led, if it was seen
  ASSERT_GT(told.size(), next);
  ASSERT_TRUE(told[next]);
  EXPECT_GT(told[next]->term, other->fence()) << "this elector's term";
  EXPECT_TRUE(std::any_of(told.begin() + static_cast<std::ptrdiff_t>(next), told.end(),
                          [&](const std::optional<Leader>& now) {
                            return now && now->term == told[next]->term && now->value == "mine";
                          }))
      << "told of its value (proclaimed after it won) while it led";
}

// A leader cut off from Redis (the server paused) has its work stopped at its lease's deadline
// by its own clock, before Redis can expire the lease, and is told the Redis error; once Redis
// answers again it stands again, and leads in a new term.
TEST(ElectorUnreachable, ALeaderCutOffIsStoppedAtItsDeadlineAndStandsAgain) {
  testing::RedisServer server;
  ClientOptions options;
  options.command_timeout = 100ms;
  Client redis(server.unix_url(), options);
  const Election<std::string> elections{"scheduler", 600ms};
  std::stop_source stop;
  std::mutex mutex;
  std::vector<std::uint64_t> terms;
  std::vector<Deposed> deposed;
  Clock::time_point stopped_at;
  Clock::time_point deadline_then;
  ElectorOptions elector;
  elector.waiting.recheck_unwatched = 100ms;
  elector.deposed = [&](const Deposed& d) {
    std::lock_guard lock(mutex);
    deposed.push_back(d);
  };
  std::thread runner([&] {
    run_elector(
        redis, elections, std::string("job"),
        [&](const Term<std::string>& term, std::stop_token work_stop) {
          {
            std::lock_guard lock(mutex);
            terms.push_back(term.number);
            if (terms.size() == 2) {
              stop.request_stop();
              return;
            }
          }
          while (!work_stop.stop_requested())
            std::this_thread::sleep_for(2ms);
          stopped_at = Clock::now();
          deadline_then = term.leader.deadline();
        },
        elector, stop.get_token());
  });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    return terms.size() == 1;
  }));
  server.pause();
  const bool told = eventually(
      [&] {
        std::lock_guard lock(mutex);
        return !deposed.empty();
      },
      3s);
  server.resume();
  runner.join();
  ASSERT_TRUE(told);
  EXPECT_GE(stopped_at, deadline_then) << "uncertain until the deadline, not lost before it";
  EXPECT_LT(stopped_at - deadline_then, 150ms) << "stopped at the deadline";
  ASSERT_EQ(deposed.size(), 2u);
  EXPECT_EQ(deposed[0].how, TermEnd::lost);
  EXPECT_EQ(deposed[0].cause, errc::command_timeout) << deposed[0].cause.message();
  ASSERT_EQ(terms.size(), 2u) << "it stood again after the loss";
  EXPECT_GT(terms[1], terms[0]);
}

// Stopping the elector while it leads stops the work, resigns at once (the next campaigner
// leads within a moment, not a TTL), and returns.
TEST_F(ElectorTest, AStoppedLeaderResignsAndItsSuccessorLeadsAtOnce) {
  std::stop_source stop;
  std::atomic<bool> leading{false};
  std::vector<Deposed> deposed;
  std::thread elector([&] {
    ElectorOptions options;
    options.deposed = [&](const Deposed& d) { deposed.push_back(d); };
    run_elector(
        redis_, elections_, name_,
        [&](const Term<std::string>&, std::stop_token work_stop) {
          leading = true;
          while (!work_stop.stop_requested())
            std::this_thread::sleep_for(5ms);
        },
        options, stop.get_token());
  });
  ASSERT_TRUE(eventually([&] { return leading.load(); }));
  std::optional<LockToken<Election<std::string>>> next;
  std::thread campaigner([&] { next = wait_for(redis_, elections_.campaign(name_), 10s); });
  ASSERT_TRUE(eventually([&] { return !nobody_waits(); }));
  const auto stopped_at = Clock::now();
  stop.request_stop();
  elector.join();
  campaigner.join();
  ASSERT_TRUE(next);
  EXPECT_LT(Clock::now() - stopped_at, 1s) << "resigned, not left to run out";
  ASSERT_EQ(deposed.size(), 1u);
  EXPECT_EQ(deposed[0].how, TermEnd::stopped);
  EXPECT_FALSE(deposed[0].cause);
  EXPECT_TRUE(redis_.process(elections_.resign(*next)));
}

// Without rejoin the elector leads one term and returns; the value is proclaimed for that term.
TEST_F(ElectorTest, WithoutRejoinItLeadsOneTermWithItsValueProclaimed) {
  int terms = 0;
  ElectorOptions options;
  options.rejoin = false;
  options.value = "10.0.0.7:8080";
  run_elector(
      redis_, elections_, name_,
      [&](const Term<std::string>& term, std::stop_token) {
        ++terms;
        const auto seen = redis_.process(elections_.leader(name_));
        ASSERT_TRUE(seen);
        EXPECT_EQ(seen->term, term.number);
        EXPECT_EQ(seen->value, "10.0.0.7:8080");
      },
      options);
  EXPECT_EQ(terms, 1);
  EXPECT_TRUE(nobody_leads());
  EXPECT_TRUE(nobody_waits());
}

// Stopped while it waits behind a leader, the elector gives its place up and returns.
TEST_F(ElectorTest, AStoppedCampaignLeavesNoPlaceBehind) {
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  std::stop_source stop;
  bool led = false;
  std::thread elector([&] {
    run_elector(
        redis_, elections_, name_, [&](const Term<std::string>&, std::stop_token) { led = true; },
        {}, stop.get_token());
  });
  ASSERT_TRUE(eventually([&] { return !nobody_waits(); }));
  stop.request_stop();
  elector.join();
  EXPECT_FALSE(led);
  EXPECT_TRUE(nobody_waits());
  EXPECT_TRUE(redis_.process(elections_.resign(*leader)));
}

// Work that throws is resigned for, and the exception leaves run_elector.
TEST_F(ElectorTest, WorkThatThrowsIsResignedForAndItsExceptionLeaves) {
  EXPECT_THROW(run_elector(redis_, elections_, name_,
                           [&](const Term<std::string>&, std::stop_token) {
                             throw std::runtime_error("the scheduler failed");
                           }),
               std::runtime_error);
  EXPECT_TRUE(nobody_leads()) << "resigned, not left to run out";
}

}  // namespace
}  // namespace leasehold
