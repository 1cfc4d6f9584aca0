// Elections against a real redis-server: a campaign leads at once when nobody does, and waits
// in turn otherwise; terms strictly increase per name; the leader's proclaimed value is read
// back only in its own term; resign is token-checked and tells the next campaigner at once;
// the leader query says none when nobody leads; a resign whose reply is lost keeps the
// leadership.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "client_list.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class ElectionTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "e" + std::to_string(unique_number());
  Election<std::string> elections_{"scheduler", 10s};
  Client redis_{server_->unix_url()};
};

TEST_F(ElectionTest, NobodyLeadsUntilACampaignWinsAndItsTermIsItsFence) {
  EXPECT_FALSE(redis_.process(elections_.leader(name_))) << "nobody leads yet";
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  EXPECT_GE(leader->fence(), 1u);
  const auto seen = redis_.process(elections_.leader(name_));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->term, leader->fence());
  EXPECT_EQ(seen->id_prefix, leader->id().hex().substr(0, 8));
  ASSERT_TRUE(seen->holder);
  EXPECT_EQ(seen->holder->pid, static_cast<std::int64_t>(::getpid()));
  EXPECT_FALSE(seen->value) << "nothing proclaimed yet";
  EXPECT_GT(seen->time_left, 9s);
  EXPECT_LE(seen->time_left, 10s);
  EXPECT_TRUE(redis_.process(elections_.resign(*leader)));
  EXPECT_FALSE(redis_.process(elections_.leader(name_))) << "resigned: nobody leads";
  EXPECT_FALSE(redis_.process(elections_.resign(*leader))) << "resigned once";
}

TEST_F(ElectionTest, AProclaimedValueIsReadInItsOwnTermOnly) {
  auto first = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(first);
  EXPECT_TRUE(redis_.process(elections_.proclaim(*first, "10.0.0.7:8080")));
  EXPECT_EQ(redis_.process(elections_.leader(name_))->value, "10.0.0.7:8080");
  EXPECT_TRUE(redis_.process(elections_.proclaim(*first, "10.0.0.7:9090")));
  EXPECT_EQ(redis_.process(elections_.leader(name_))->value, "10.0.0.7:9090");
  EXPECT_TRUE(redis_.process(elections_.resign(*first)));
  EXPECT_FALSE(redis_.process(elections_.proclaim(*first, "stale"))) << "no longer leads";

  auto second = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(second);
  EXPECT_GT(second->fence(), first->fence()) << "terms strictly increase";
  const auto seen = redis_.process(elections_.leader(name_));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->term, second->fence());
  EXPECT_FALSE(seen->value) << "the last term's value is not this term's";
  EXPECT_TRUE(redis_.process(elections_.resign(*second)));
}

// A campaign behind a leader waits in turn, and a resign hands it the leadership within about a
// round trip, with the next term.
TEST_F(ElectionTest, AResignHandsTheLeadershipToTheNextCampaignerAtOnce) {
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  std::optional<LockToken<Election<std::string>>> next;
  Clock::time_point led_at;
  std::thread campaigner([&] {
    next = wait_for(redis_, elections_.campaign(name_), 10s);
    led_at = Clock::now();
  });
  const std::string queue = detail::queue_key(elections_.key(name_));
  ASSERT_TRUE(eventually([&] { return server_->command({"ZCARD", queue}).integer == 1; }));
  const Clock::time_point resigned_at = Clock::now();
  ASSERT_TRUE(redis_.process(elections_.resign(*leader)));
  campaigner.join();
  ASSERT_TRUE(next);
  EXPECT_LT(led_at - resigned_at, 300ms);
  EXPECT_GT(next->fence(), leader->fence());
  EXPECT_EQ(redis_.process(elections_.leader(name_))->term, next->fence());
  EXPECT_EQ(redis_.process(elections_.force_release(name_)), 1) << "an operator deposes it";
  EXPECT_FALSE(redis_.process(elections_.leader(name_)));
  EXPECT_FALSE(redis_.process(next->extend())) << "a deposed leader's lease is gone";
}

// A resign whose reply never comes (its connection is killed while the paused server holds it)
// has an unknown outcome: it fails, and the leader keeps its leadership and its token, so that
// resigning again works.
TEST(ElectionResign, AResignWhoseReplyIsLostKeepsTheLeadershipToResignAgain) {
  testing::RedisServer server;  // paused by this test
  ClientOptions options;
  options.client_name = "resigner";
  Client redis(server.unix_url(), options);
  const Election<std::string> elections{"scheduler", 10s};
  auto leader = wait_for(redis, elections.campaign(std::string("r")), 5s);
  ASSERT_TRUE(leader);
  server.command({"CLIENT", "PAUSE", "10000", "WRITE"});
  std::optional<bool> resigned;
  std::optional<std::error_code> failed;
  std::thread resigning([&] {
    try {
      resigned = redis.process(elections.resign(*leader));
    } catch (const Error& e) {
      failed = e.code();
    }
  });
  // Sent, and held by the paused server: the connection is killed before it runs.
  ASSERT_TRUE(eventually([&] {
    return server.command({"INFO", "clients"}).str.find("blocked_clients:1") != std::string::npos;
  }));
  server.command({"CLIENT", "KILL", "ID", testing::client_id(server, "resigner")});
  resigning.join();
  server.command({"CLIENT", "UNPAUSE"});
  EXPECT_FALSE(resigned) << "no answer came: the outcome is unknown";
  ASSERT_TRUE(failed);
  EXPECT_FALSE(leader->expired()) << "the token is as it was";
  const auto leading = redis.process(elections.leader(std::string("r")));
  ASSERT_TRUE(leading) << "the lost resign never ran";
  EXPECT_EQ(leading->term, leader->fence());
  EXPECT_TRUE(redis.process(elections.resign(*leader))) << "resigned again";
  EXPECT_FALSE(redis.process(elections.leader(std::string("r"))));
}

// A leader that stops extending (it crashed) is replaced once its lease runs out.
TEST_F(ElectionTest, ALeaderThatStopsExtendingIsReplacedAfterItsTtl) {
  const Election<std::string> short_terms{"scheduler", 300ms};
  auto crashed = wait_for(redis_, short_terms.campaign(name_), 5s);
  ASSERT_TRUE(crashed);
  const Clock::time_point taken_at = Clock::now();
  auto next = wait_for(redis_, short_terms.campaign(name_), 5s);
  ASSERT_TRUE(next);
  EXPECT_GE(Clock::now() - taken_at, 290ms);
  EXPECT_LT(Clock::now() - taken_at, 300ms + 300ms);
  EXPECT_GT(next->fence(), crashed->fence());
  EXPECT_TRUE(redis_.process(short_terms.resign(*next)));
}

}  // namespace
}  // namespace leasehold
