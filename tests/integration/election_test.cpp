// Elections against a real redis-server: a campaign leads at once when nobody does, and waits
// in turn otherwise; terms strictly increase per name; the leader's proclaimed value is read
// back only in its own term; resign is token-checked and tells the next campaigner at once;
// the leader query says none when nobody leads.
#include <gtest/gtest.h>

#include <string>
#include <thread>

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
