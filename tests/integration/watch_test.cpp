// Watching an Election's leader against a real redis-server: the state at once, then each new
// leader, each proclaimed value and each time nobody leads (a resign, an expiry, a deposition, a
// key deleted behind the library's back), told within a round trip or, for what tells no one, by
// the first observers' look, or when a lost subscription comes back; what another publisher sends
// is ignored; sync, async and callback forms; cancelling; a key of the wrong type ends the watch
// with an error; waiters queued behind an observed leader still get their turn.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "minimal_acl.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using Seen = std::optional<Leader>;

class WatchTest : public testing::SharedServerTest {
 protected:
  // The next state `watch` is told, within `within`.
  static Seen next_within(Watch<Seen>& watch, Clock::duration within = 3s) {
    auto seen = watch.next(Clock::now() + within);
    if (!seen)
      ADD_FAILURE() << "no state within " << std::chrono::duration<double>(within).count() << " s";
    return seen.value_or(Seen{});
  }

  std::string name_ = "w" + std::to_string(unique_number());
  Election<std::string> elections_{"watched", 10s};
  Client redis_{server_->unix_url()};
};

TEST_F(WatchTest, AWatchIsToldTheLeaderNowThenEachNewLeaderValueAndResign) {
  Watch watch(redis_, elections_.observe(name_));
  EXPECT_FALSE(next_within(watch)) << "nobody leads yet";

  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  // Each change is told by its announcement, long before the 40 s recheck.
  Seen seen = next_within(watch, 2s);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->term, leader->fence());
  EXPECT_EQ(seen->id_prefix, leader->id().hex().substr(0, 8));
  ASSERT_TRUE(seen->holder);
  EXPECT_EQ(seen->holder->pid, static_cast<std::int64_t>(::getpid()));
  EXPECT_FALSE(seen->value);
  EXPECT_GT(seen->time_left, 5s);

  ASSERT_TRUE(redis_.process(elections_.proclaim(*leader, "10.0.0.7:8080")));
  seen = next_within(watch, 2s);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->value, "10.0.0.7:8080");
  EXPECT_EQ(seen->term, leader->fence());

  ASSERT_TRUE(redis_.process(elections_.resign(*leader)));
  EXPECT_FALSE(next_within(watch, 2s)) << "resigned: nobody leads";

  auto second = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(second);
  seen = next_within(watch, 2s);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->term, second->fence());
  EXPECT_GT(seen->term, leader->fence());
  EXPECT_FALSE(seen->value) << "the first term's value is not the second's";
  EXPECT_FALSE(watch.next(Clock::now() + 200ms)) << "nothing else changed";
  redis_.process(elections_.resign(*second));
}

TEST_F(WatchTest, ALeaderThatStopsExtendingIsSeenGoneByEveryObserverSoonAfterItsExpiry) {
  const Election<std::string> short_lived{"watched", 400ms};
  auto leader = wait_for(redis_, short_lived.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  // Three observers, each with its own client: two look at the expiry, the third is told.
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Watch<Seen>>> watches;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<Client>(server_->unix_url()));
    watches.push_back(std::make_unique<Watch<Seen>>(*clients.back(), short_lived.observe(name_)));
    ASSERT_TRUE(next_within(*watches.back())) << "observer " << i << " sees the leader";
  }
  const auto expiry = leader->deadline();
  for (auto& watch : watches) {
    EXPECT_FALSE(next_within(*watch, 3s)) << "the lease ran out: nobody leads";
    // By the recheck alone it would take 40 s; the lookers' look comes right after the expiry.
    EXPECT_LT(Clock::now() - expiry, 2s);
  }
}

TEST_F(WatchTest, ADepositionAndAKeyDeletedBehindItsBackAreSeen) {
  WatchOptions options;
  options.recheck = 300ms;  // a key deleted behind the library's back is seen at a look
  Watch watch(redis_, elections_.observe(name_), options);
  EXPECT_FALSE(next_within(watch));
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  ASSERT_TRUE(next_within(watch));
  EXPECT_EQ(redis_.process(elections_.force_release(name_)), 1);
  EXPECT_FALSE(next_within(watch, 2s)) << "deposed: nobody leads";

  leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  ASSERT_TRUE(next_within(watch));
  server_->command({"DEL", elections_.key(name_)});
  EXPECT_FALSE(next_within(watch, 3s)) << "deleted: nobody leads";
}

TEST_F(WatchTest, ACampaignerQueuedBehindAnObservedLeaderGetsItsTurnAndIsSeen) {
  Watch watch(redis_, elections_.observe(name_));
  EXPECT_FALSE(next_within(watch));
  auto first = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(first);
  ASSERT_TRUE(next_within(watch));
  auto second = std::async(std::launch::async, [&] {
    Client other(server_->unix_url());
    return wait_for(other, elections_.campaign(name_), 10s);
  });
  ASSERT_TRUE(eventually([&] {
    return server_->command({"ZCARD", detail::queue_key(elections_.key(name_))}).integer == 1;
  }));
  const auto resigned = Clock::now();
  ASSERT_TRUE(redis_.process(elections_.resign(*first)));
  auto next = second.get();
  ASSERT_TRUE(next);
  EXPECT_LT(Clock::now() - resigned, 2s) << "told of its turn, not at a recheck";
  // The watch may see the moment between the two terms, and sees the second.
  Seen seen = next_within(watch);
  if (!seen)
    seen = next_within(watch);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->term, next->fence());
  redis_.process(elections_.resign(*next));
}

TEST_F(WatchTest, AChangeMadeWhileItsSubscriptionWasDownIsSeenWhenItComesBack) {
  Watch watch(redis_, elections_.observe(name_));
  EXPECT_FALSE(next_within(watch));
  ASSERT_TRUE(eventually([&] {  // subscribed: the kill below cuts a subscription
    return server_
               ->command({"PUBSUB", "SHARDNUMSUB", detail::changed_channel(elections_.key(name_))})
               .elements.at(1)
               .integer == 1;
  }));
  EXPECT_EQ(server_->command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1);
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);  // announced to nobody
  ASSERT_TRUE(leader);
  // Seen when the subscription comes back (a look at once), not at the 40 s recheck.
  const Seen seen = next_within(watch, 5s);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->term, leader->fence());
  redis_.process(elections_.resign(*leader));
}

TEST_F(WatchTest, WhatAnotherPublisherSendsOnTheChannelIsIgnored) {
  Watch watch(redis_, elections_.observe(name_));
  EXPECT_FALSE(next_within(watch));
  const std::string channel = detail::changed_channel(elections_.key(name_));
  ASSERT_TRUE(eventually([&] {
    return server_->command({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer == 1;
  }));
  for (const char* message : {"hello", "", "1 2 3", "18 5000 x y"})
    EXPECT_EQ(server_->command({"SPUBLISH", channel, message}).integer, 1);
  EXPECT_FALSE(watch.next(Clock::now() + 300ms)) << "no change told";
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  const Seen seen = next_within(watch, 2s);
  ASSERT_TRUE(seen) << "a real change is still told";
  EXPECT_EQ(seen->term, leader->fence());
  redis_.process(elections_.resign(*leader));
}

TEST_F(WatchTest, TheAsyncFormIsToldEachChangeAndCanBeCancelled) {
  asio::io_context io;
  Client client(io.get_executor(), server_->unix_url());
  std::thread runner([&] { io.run(); });
  {
    Watch watch(client, elections_.observe(name_));
    EXPECT_FALSE(watch.async_next(asio::use_future).get()) << "nobody leads yet";
    auto told = watch.async_next(asio::use_future);
    auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
    ASSERT_TRUE(leader);
    ASSERT_EQ(told.wait_for(2s), std::future_status::ready);
    EXPECT_EQ(told.get()->term, leader->fence());

    asio::cancellation_signal cancel;
    std::promise<std::error_code> ended;
    watch.async_next(asio::bind_cancellation_slot(
        cancel.slot(), [&](std::error_code error, Seen) { ended.set_value(error); }));
    asio::post(io, [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto outcome = ended.get_future();
    ASSERT_EQ(outcome.wait_for(2s), std::future_status::ready);
    EXPECT_EQ(outcome.get(), asio::error::operation_aborted);
    redis_.process(elections_.resign(*leader));
    auto after = watch.async_next(asio::use_future);
    ASSERT_EQ(after.wait_for(2s), std::future_status::ready) << "the watch ran on";
    EXPECT_FALSE(after.get());
  }
  asio::post(io, [&] { client.close(); });
  runner.join();
}

TEST_F(WatchTest, ACallbackIsToldEachChangeAndNothingOnceCancelled) {
  std::mutex mutex;
  std::vector<Seen> told;
  Watch watch(redis_, elections_.observe(name_), [&](std::error_code error, const Seen& seen) {
    EXPECT_FALSE(error);
    const std::lock_guard lock(mutex);
    told.push_back(seen);
  });
  const auto count = [&] {
    const std::lock_guard lock(mutex);
    return told.size();
  };
  ASSERT_TRUE(eventually([&] { return count() == 1; }));
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  ASSERT_TRUE(eventually([&] { return count() == 2; }));
  EXPECT_THROW(watch.next(Clock::now()), Error) << "its states go to the callback";
  watch.cancel();
  redis_.process(elections_.resign(*leader));
  // The resign's announcement goes out at once; a callback still registered would have it
  // within this time.
  EXPECT_FALSE(eventually([&] { return count() > 2; }, 300ms));
  const std::lock_guard lock(mutex);
  EXPECT_FALSE(told[0]);
  ASSERT_TRUE(told[1]);
  EXPECT_EQ(told[1]->term, leader->fence());
}

TEST_F(WatchTest, AKeyOfAnotherTypeEndsTheWatchWithTheError) {
  server_->command({"HSET", elections_.key(name_), "f", "v"});
  Watch watch(redis_, elections_.observe(name_));
  try {
    watch.next(Clock::now() + 5s);
    FAIL() << "a hash where the leader's key should be";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("WRONGTYPE"), std::string::npos) << error.what();
  }
  server_->command({"DEL", elections_.key(name_)});
}

TEST_F(WatchTest, WatchersOfAHeldNameSendNothingUntilTheirRecheck) {
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);  // 10 s, not extended
  ASSERT_TRUE(leader);
  const auto scripts = [&] {
    return testing::command_calls(*server_, "evalsha") + testing::command_calls(*server_, "eval");
  };
  const long long started = scripts();
  Client observing(server_->unix_url());
  std::vector<std::unique_ptr<Watch<Seen>>> watches;
  for (int i = 0; i < 20; ++i) {
    watches.push_back(std::make_unique<Watch<Seen>>(observing, elections_.observe(name_)));
    ASSERT_TRUE(next_within(*watches.back()));
  }
  // Settled: each looked at its start and again once its subscription was confirmed.
  ASSERT_TRUE(eventually([&] { return scripts() - started >= 2 * 20; }));
  const long long before = scripts();
  // Two seconds in which nothing changes: no observer looks nor renews (recheck: 40 s; the
  // lookers look at the lease's expiry, 8 s away).
  EXPECT_FALSE(eventually([&] { return scripts() > before; }, 2s, 50ms)) << scripts() - before;
  redis_.process(elections_.resign(*leader));
}

// A campaigner whose ACL is waiting's alone (docs/locks.md, without the observers' hash commands)
// still leads, proclaims and resigns an observed election: announcing never fails the change,
// and leaves no lease behind; the observers then learn at their lookers' looks.
TEST_F(WatchTest, ACampaignerWithoutTheHashCommandsStillLeadsAnObservedElection) {
  server_->command(testing::waiting_acl_setuser("waiter", "pw"));
  Client limited("unix://waiter:pw@" + server_->socket_path());
  Watch watch(redis_, elections_.observe(name_));
  EXPECT_FALSE(next_within(watch));
  auto leader = wait_for(limited, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader) << "the grant's announcement, refused, did not fail the campaign";
  EXPECT_TRUE(limited.process(elections_.proclaim(*leader, "v")));
  EXPECT_TRUE(limited.process(elections_.resign(*leader)));
  EXPECT_FALSE(redis_.process(elections_.leader(name_))) << "no lease left behind";
  try {
    Watch refused(limited, elections_.observe(name_));
    refused.next(Clock::now() + 5s);
    FAIL() << "observing needs the hash commands";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::no_permission) << error.what();
  }
}

TEST(WatchOptionsTest, OptionsThatCannotWorkAreRefused) {
  Client unused("redis://127.0.0.1:1");
  const Election<std::string> elections{"watched", 1s};
  WatchOptions options;
  options.recheck = options.ticket_ttl;
  EXPECT_THROW(Watch(unused, elections.observe("x"), options), Error);
  options = {};
  options.recheck_unwatched = 0ms;
  EXPECT_THROW(Watch(unused, elections.observe("x"), options), Error);
}

// A thousand watches of one name on one client share its one subscription: one message per
// change reaches the client, whatever the number of its watches.
TEST_F(WatchTest, AThousandWatchesOfOneClientShareOneSubscription) {
  std::vector<std::unique_ptr<Watch<Seen>>> watches;
  for (int i = 0; i < 1000; ++i)
    watches.push_back(std::make_unique<Watch<Seen>>(redis_, elections_.observe(name_)));
  for (auto& watch : watches)
    ASSERT_FALSE(next_within(*watch)) << "nobody leads yet";
  const std::string channel = detail::changed_channel(elections_.key(name_));
  EXPECT_EQ(server_->command({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer, 1);
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  for (auto& watch : watches)
    ASSERT_TRUE(next_within(*watch, 2s));
  redis_.process(elections_.resign(*leader));
}

}  // namespace
}  // namespace leasehold
