// The tracking of keys, stepped by hand: what is asked of the subscriber and the tracker
// connections, when a key is armed, how an invalidation arms it again before its watches are
// told, and what a lost connection, a new subscriber id or a refusal does.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "key_tracking.hpp"

namespace leasehold::detail {
namespace {

using What = KeyTracking::Command::What;
using Command = KeyTracking::Command;
using Effects = KeyTracking::Effects;

struct Heard {
  std::vector<std::pair<ChannelEvent, std::string>> events;
  ChannelListener listener() {
    return [this](ChannelEvent event, std::string_view key) {
      events.emplace_back(event, std::string(key));
    };
  }
  std::vector<std::pair<ChannelEvent, std::string>> take() { return std::exchange(events, {}); }
};

void deliver(Effects& effects) {
  for (auto& delivery : effects.deliveries)
    (*delivery.listener)(delivery.event, delivery.key);
  effects.deliveries.clear();
}

Command ask_id() {
  return {What::ask_id, {}, 0, 0};
}
Command subscribe() {
  return {What::subscribe, {}, 0, 0};
}
Command enable(std::uint64_t redirect) {
  return {What::enable, {}, redirect, 0};
}
Command arm(std::string key, std::uint64_t which) {
  return {What::arm, std::move(key), 0, which};
}

class KeyTrackingTest : public testing::Test {
 protected:
  // Both connections made, the subscriber's id 7, and `key` watched: everything it takes until
  // the key is armed.
  void watch_until_armed(const std::string& key, Heard& heard) {
    Effects effects;
    tracking_.on_subscriber_connected(effects);
    EXPECT_EQ(effects.commands, std::vector{ask_id()}) << "asked first, watched keys or not";
    effects = {};
    tracking_.watch(key, heard.listener(), effects);
    tracking_.on_tracker_connected(effects);
    EXPECT_TRUE(effects.commands.empty()) << "nothing to do before the id is known";
    tracking_.on_subscriber_id(7, effects);
    EXPECT_EQ(effects.commands, (std::vector{subscribe(), enable(7)}));
    effects = {};
    tracking_.on_enabled(7, true, effects);
    EXPECT_TRUE(effects.commands.empty()) << "not armed before invalidations can arrive";
    tracking_.on_subscribed(true, effects);
    EXPECT_EQ(effects.commands, std::vector{arm(key, 1)});
    EXPECT_TRUE(tracking_.ready());
    effects = {};
    tracking_.on_armed(key, 1, true, effects);
    deliver(effects);
    EXPECT_EQ(heard.take(), (std::vector{std::pair{ChannelEvent::subscribed, key}}));
  }

  KeyTracking tracking_;
};

TEST_F(KeyTrackingTest, AKeyIsArmedOnceTrackingIsOnAndTheInvalidationsSubscribed) {
  Heard heard;
  watch_until_armed("k", heard);
}

TEST_F(KeyTrackingTest, AnInvalidationArmsTheKeyAgainThenTellsItsWatches) {
  Heard heard;
  watch_until_armed("k", heard);
  Effects effects;
  tracking_.on_invalidated(std::vector<std::string>{"k", "unwatched"}, effects);
  EXPECT_EQ(effects.commands, std::vector{arm("k", 2)});
  EXPECT_TRUE(effects.deliveries.empty()) << "told only once armed again";
  effects = {};
  tracking_.on_armed("k", 2, true, effects);
  deliver(effects);
  EXPECT_EQ(heard.take(), (std::vector{std::pair{ChannelEvent::message, std::string("k")}}));
}

TEST_F(KeyTrackingTest, AnInvalidationWhileArmingArmsOnceMoreBeforeTelling) {
  Heard heard;
  watch_until_armed("k", heard);
  Effects effects;
  tracking_.on_invalidated(std::vector<std::string>{"k"}, effects);
  effects = {};
  // It came on the subscriber connection before the tracker's answer to the arm.
  tracking_.on_invalidated(std::vector<std::string>{"k"}, effects);
  EXPECT_TRUE(effects.commands.empty());
  tracking_.on_armed("k", 2, true, effects);
  EXPECT_EQ(effects.commands, std::vector{arm("k", 3)});
  EXPECT_TRUE(effects.deliveries.empty());
  effects = {};
  tracking_.on_armed("k", 2, true, effects);
  EXPECT_TRUE(effects.commands.empty() && effects.deliveries.empty()) << "an older arm's answer";
  tracking_.on_armed("k", 3, true, effects);
  deliver(effects);
  EXPECT_EQ(heard.take().size(), 1u);
}

TEST_F(KeyTrackingTest, AFlushArmsEveryKeyAgain) {
  Heard heard;
  watch_until_armed("k", heard);
  Effects effects;
  Heard other;
  tracking_.watch("j", other.listener(), effects);
  EXPECT_EQ(effects.commands, std::vector{arm("j", 1)});
  effects = {};
  tracking_.on_armed("j", 1, true, effects);
  effects = {};
  tracking_.on_invalidated(std::nullopt, effects);
  EXPECT_EQ(effects.commands, (std::vector{arm("j", 2), arm("k", 2)}));
}

TEST_F(KeyTrackingTest, ALostConnectionTellsUnavailableAndANewSubscriberIdRedirectsAndArmsAgain) {
  Heard heard;
  watch_until_armed("k", heard);
  Effects effects;
  tracking_.on_subscriber_lost(effects);
  deliver(effects);
  EXPECT_EQ(heard.take(), (std::vector{std::pair{ChannelEvent::unavailable, std::string("k")}}));
  EXPECT_FALSE(tracking_.ready());
  effects = {};
  tracking_.on_subscriber_connected(effects);
  tracking_.on_subscriber_id(9, effects);
  EXPECT_EQ(effects.commands, (std::vector{ask_id(), subscribe(), enable(9)}));
  effects = {};
  tracking_.on_subscribed(true, effects);
  EXPECT_TRUE(effects.commands.empty()) << "tracking still redirects to the old id";
  tracking_.on_enabled(9, true, effects);
  EXPECT_EQ(effects.commands, std::vector{arm("k", 2)});
  effects = {};
  tracking_.on_armed("k", 2, true, effects);
  deliver(effects);
  EXPECT_EQ(heard.take(), (std::vector{std::pair{ChannelEvent::subscribed, std::string("k")}}));

  tracking_.on_tracker_lost(effects);
  deliver(effects);
  EXPECT_EQ(heard.take().size(), 1u);
  effects = {};
  tracking_.on_tracker_connected(effects);
  EXPECT_EQ(effects.commands, std::vector{enable(9)}) << "a new tracker connection";
}

TEST_F(KeyTrackingTest, ARefusalLeavesTheKeysUntrackedUntilTheNextConnection) {
  Heard heard;
  Effects effects;
  tracking_.on_subscriber_connected(effects);
  tracking_.watch("k", heard.listener(), effects);
  tracking_.on_tracker_connected(effects);
  tracking_.on_subscriber_id(7, effects);
  effects = {};
  tracking_.on_subscribed(true, effects);
  tracking_.on_enabled(7, false, effects);  // an ACL refused CLIENT TRACKING
  EXPECT_TRUE(effects.commands.empty());
  EXPECT_FALSE(tracking_.ready());
  Heard late;
  tracking_.watch("j", late.listener(), effects);
  EXPECT_TRUE(effects.commands.empty()) << "not asked again on this connection";
  tracking_.on_tracker_lost(effects);
  tracking_.on_tracker_connected(effects);
  EXPECT_EQ(effects.commands, std::vector{enable(7)});

  // A refused id: nothing is asked of the tracker.
  KeyTracking refused;
  effects = {};
  refused.on_subscriber_connected(effects);
  refused.watch("k", heard.listener(), effects);
  refused.on_tracker_connected(effects);
  refused.on_subscriber_id(std::nullopt, effects);
  EXPECT_EQ(effects.commands, std::vector{ask_id()});
}

TEST_F(KeyTrackingTest, AnArmRefusedMakesEveryKeyUnavailable) {
  Heard heard;
  watch_until_armed("k", heard);
  Effects effects;
  tracking_.on_invalidated(std::vector<std::string>{"k"}, effects);
  tracking_.on_armed("k", 2, false, effects);
  deliver(effects);
  EXPECT_EQ(heard.take(), (std::vector{std::pair{ChannelEvent::unavailable, std::string("k")}}));
  EXPECT_FALSE(tracking_.ready());
}

TEST_F(KeyTrackingTest, ALaterWatchOfAnArmedKeyIsToldAtOnceAndTheLastUnwatchForgetsIt) {
  Heard heard;
  watch_until_armed("k", heard);
  Effects effects;
  Heard second;
  const std::uint64_t id = tracking_.watch("k", second.listener(), effects);
  EXPECT_TRUE(effects.commands.empty());
  deliver(effects);
  EXPECT_EQ(second.take().size(), 1u);
  tracking_.unwatch(id, effects);
  EXPECT_TRUE(tracking_.watching());
  tracking_.on_invalidated(std::vector<std::string>{"k"}, effects);
  tracking_.on_armed("k", 2, true, effects);
  deliver(effects);
  EXPECT_TRUE(second.take().empty()) << "unwatched";
  EXPECT_EQ(heard.take().size(), 1u);
}

}  // namespace
}  // namespace leasehold::detail
