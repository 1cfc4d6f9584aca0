// The subscriber's bookkeeping, stepped by hand: one subscription per channel for all its
// watches, what is sent as watches come and go, confirmations and messages arrive, and the
// connection is lost and made again.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "subscription_set.hpp"

namespace leasehold::detail {
namespace {

using Verb = SubscriptionSet::Verb;
using Command = SubscriptionSet::Command;
using Effects = SubscriptionSet::Effects;

struct Heard {
  std::vector<std::pair<ChannelEvent, std::string>> events;
  ChannelListener listener() {
    return [this](ChannelEvent event, std::string_view payload) {
      events.emplace_back(event, std::string(payload));
    };
  }
};

void deliver(Effects& effects) {
  for (auto& delivery : effects.deliveries)
    (*delivery.listener)(delivery.event, delivery.payload);
  effects.deliveries.clear();
}

class SubscriptionSetTest : public testing::Test {
 protected:
  SubscriptionSetTest() {
    Effects effects;
    set_.on_connected(effects);
    EXPECT_TRUE(effects.commands.empty());
  }
  SubscriptionSet set_;
};

TEST_F(SubscriptionSetTest, WatchesOfOneChannelShareOneSubscriptionThatEndsWithTheLast) {
  Heard first, second;
  Effects effects;
  const auto a = set_.watch("ch", first.listener(), effects);
  const auto b = set_.watch("ch", second.listener(), effects);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::subscribe, "ch"}}));
  effects.commands.clear();
  set_.on_confirmed(Verb::subscribe, "ch", true, effects);
  deliver(effects);
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].first, ChannelEvent::subscribed);
  EXPECT_EQ(second.events.size(), 1u);
  EXPECT_EQ(set_.subscribed(), 1u);

  set_.on_message("ch", "id-1", effects);
  deliver(effects);
  EXPECT_EQ(first.events.back(), std::make_pair(ChannelEvent::message, std::string("id-1")));
  EXPECT_EQ(second.events.back(), std::make_pair(ChannelEvent::message, std::string("id-1")));

  set_.unwatch(a, effects);
  EXPECT_TRUE(effects.commands.empty());
  set_.unwatch(b, effects);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::unsubscribe, "ch"}}));
  effects.commands.clear();
  set_.on_confirmed(Verb::unsubscribe, "ch", true, effects);
  EXPECT_EQ(set_.channels(), 0u);  // nothing leaks after the wait
  EXPECT_TRUE(effects.commands.empty());
}

TEST_F(SubscriptionSetTest, AWatchOnASubscribedChannelHearsAtOnceThatItIsSubscribed) {
  Heard first, late;
  Effects effects;
  set_.watch("ch", first.listener(), effects);
  set_.on_confirmed(Verb::subscribe, "ch", true, effects);
  effects = {};
  set_.watch("ch", late.listener(), effects);
  EXPECT_TRUE(effects.commands.empty());
  deliver(effects);
  ASSERT_EQ(late.events.size(), 1u);
  EXPECT_EQ(late.events[0].first, ChannelEvent::subscribed);
}

TEST_F(SubscriptionSetTest, AWatchThatEndsBeforeTheConfirmationUnsubscribesOnIt) {
  Heard heard;
  Effects effects;
  const auto id = set_.watch("ch", heard.listener(), effects);
  set_.unwatch(id, effects);
  EXPECT_EQ(effects.commands.size(), 1u);  // only the subscribe so far
  effects = {};
  set_.on_confirmed(Verb::subscribe, "ch", true, effects);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::unsubscribe, "ch"}}));
  deliver(effects);
  EXPECT_TRUE(heard.events.empty());
}

TEST_F(SubscriptionSetTest, AChannelWatchedAgainWhileItUnsubscribesIsSubscribedAgain) {
  Heard heard;
  Effects effects;
  const auto id = set_.watch("ch", heard.listener(), effects);
  set_.on_confirmed(Verb::subscribe, "ch", true, effects);
  set_.unwatch(id, effects);
  effects = {};
  set_.watch("ch", heard.listener(), effects);
  EXPECT_TRUE(effects.commands.empty());  // the unsubscribe's answer comes first
  set_.on_confirmed(Verb::unsubscribe, "ch", true, effects);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::subscribe, "ch"}}));
}

TEST_F(SubscriptionSetTest, AfterALostConnectionEveryWatchedChannelIsSubscribedAgain) {
  Heard heard;
  Effects effects;
  set_.watch("a", heard.listener(), effects);
  const auto b = set_.watch("b", heard.listener(), effects);
  set_.on_confirmed(Verb::subscribe, "a", true, effects);
  set_.on_confirmed(Verb::subscribe, "b", true, effects);
  set_.unwatch(b, effects);
  set_.on_lost();
  EXPECT_EQ(set_.subscribed(), 0u);
  EXPECT_EQ(set_.channels(), 1u);
  effects = {};
  Heard later;
  set_.watch("c", later.listener(), effects);  // while disconnected: sent at the connection
  EXPECT_TRUE(effects.commands.empty());
  set_.on_connected(effects);
  EXPECT_EQ(effects.commands,
            (std::vector<Command>{{Verb::subscribe, "a"}, {Verb::subscribe, "c"}}));
  effects = {};
  heard.events.clear();
  set_.on_confirmed(Verb::subscribe, "a", true, effects);
  deliver(effects);
  ASSERT_EQ(heard.events.size(), 1u);  // "subscribed" again: look now, messages may be lost
  EXPECT_EQ(heard.events[0].first, ChannelEvent::subscribed);
}

TEST_F(SubscriptionSetTest, ASubscriptionTheServerEndsIsReportedAndMadeAgain) {
  Heard heard;
  Effects effects;
  set_.watch("ch", heard.listener(), effects);
  set_.on_confirmed(Verb::subscribe, "ch", true, effects);
  effects = {};
  heard.events.clear();
  set_.on_confirmed(Verb::unsubscribe, "ch", false, effects);
  deliver(effects);
  ASSERT_EQ(heard.events.size(), 1u);
  EXPECT_EQ(heard.events[0].first, ChannelEvent::unavailable);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::subscribe, "ch"}}));
}

TEST_F(SubscriptionSetTest, ARefusedSubscriptionIsReportedAndTriedAgainAtTheNextConnection) {
  Heard heard, late;
  Effects effects;
  set_.watch("ch", heard.listener(), effects);
  effects = {};
  set_.on_refused(Verb::subscribe, "ch", effects);
  deliver(effects);
  ASSERT_EQ(heard.events.size(), 1u);
  EXPECT_EQ(heard.events[0].first, ChannelEvent::unavailable);
  set_.watch("ch", late.listener(), effects);
  EXPECT_TRUE(effects.commands.empty());
  deliver(effects);
  EXPECT_EQ(late.events.at(0).first, ChannelEvent::unavailable);
  set_.on_lost();
  set_.on_connected(effects);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::subscribe, "ch"}}));
}

TEST_F(SubscriptionSetTest, ALateDuplicateConfirmationOfAnUnwatchedChannelUnsubscribes) {
  Effects effects;
  set_.on_confirmed(Verb::subscribe, "gone", true, effects);
  EXPECT_EQ(effects.commands, (std::vector<Command>{{Verb::unsubscribe, "gone"}}));
  effects = {};
  set_.on_confirmed(Verb::unsubscribe, "gone", true, effects);
  EXPECT_EQ(set_.channels(), 0u);
  set_.on_message("gone", "x", effects);
  EXPECT_TRUE(effects.deliveries.empty());
}

}  // namespace
}  // namespace leasehold::detail
