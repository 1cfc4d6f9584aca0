// The kinds' name_of_key(): the name whose lease a key is, read back from the key layout
// (docs/keys.md), with the %-escaping of braces undone; any other key is no lease. And where the
// fenced kinds count their fences: one counter per hash slot and prefix.
#include <gtest/gtest.h>

#include <set>

#include "leasehold/lock.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"
#include "leasehold/slot.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

// Braces and '%' are escaped in a tagged key; ':' and spaces are not.
const std::string kAwkwardName = "a{b}%7B: c";

TEST(KeyNames, AnRwLocksLeaseKeysNameTheirNameAndNoOtherKeyDoes) {
  const RwLock<std::string> rw{"run", 1s, "pfx"};
  EXPECT_EQ(rw.name_of_key(rw.writer_key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(rw.name_of_key(rw.readers_key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(rw.name_of_key(rw.intent_key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(rw.name_of_key(rw.own_fence_key(kAwkwardName)), std::nullopt)
      << "a counter is no lease";
  EXPECT_EQ(rw.name_of_key(rw.fence_counter_key(kAwkwardName)), std::nullopt);
  EXPECT_EQ(rw.name_of_key(detail::queue_key(rw.writer_key("x"))), std::nullopt);
  const RwLock<std::string> other_prefix{"run", 1s, "other"};
  EXPECT_EQ(rw.name_of_key(other_prefix.writer_key("x")), std::nullopt);
  const RwLock<std::string> other_namespace{"jobs", 1s, "pfx"};
  EXPECT_EQ(rw.name_of_key(other_namespace.writer_key("x")), std::nullopt);
  EXPECT_EQ(rw.name_of_key("pfx:RwLock:{run:}:w"), std::nullopt) << "no name";
}

TEST(KeyNames, ASemaphoresHoldersKeyNamesItsName) {
  const Semaphore<std::string> permits{"run", 2, 1s, "pfx"};
  EXPECT_EQ(permits.name_of_key(permits.holders_key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(permits.name_of_key(permits.count_key(kAwkwardName)), std::nullopt);
  EXPECT_EQ(permits.name_of_key(permits.own_fence_key(kAwkwardName)), std::nullopt);
  EXPECT_EQ(permits.name_of_key(permits.fence_counter_key(kAwkwardName)), std::nullopt);
}

TEST(KeyNames, ALocksKeyNamesItsNameFencedOrNot) {
  const Lock<std::string> plain{"cron", 1s, "pfx"};
  EXPECT_EQ(plain.name_of_key(plain.key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(plain.name_of_key("pfx:Lock:other:x"), std::nullopt);
  EXPECT_EQ(plain.name_of_key("pfx:Lock:cron:"), std::nullopt);
  const auto fenced = plain.with_fencing();
  EXPECT_EQ(fenced.name_of_key(fenced.key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(fenced.name_of_key(fenced.own_fence_key(kAwkwardName)), std::nullopt);
  EXPECT_EQ(fenced.name_of_key(fenced.fence_counter_key(kAwkwardName)), std::nullopt);
}

TEST(KeyNames, FenceCountersAreOnePerSlotAndPrefixInTheSlotOfTheirNames) {
  const auto lock = Lock<std::string>{"jobs", 1s, "pfx"}.with_fencing();
  const auto rw = RwLock<std::string>{"jobs", 1s, "pfx"}.with_fencing();
  const auto permits = Semaphore<std::string>{"jobs", 2, 1s, "pfx"}.with_fencing();
  for (const std::string& name : {kAwkwardName, std::string("invoice-42"), std::string()}) {
    const std::string counter = lock.fence_counter_key(name);
    EXPECT_TRUE(counter.starts_with("pfx:Fences{")) << counter;
    EXPECT_EQ(key_slot(counter), key_slot(lock.key(name)));
    EXPECT_EQ(key_slot(rw.fence_counter_key(name)), key_slot(rw.writer_key(name)));
    EXPECT_EQ(key_slot(permits.fence_counter_key(name)), key_slot(permits.holders_key(name)));
  }
  // Every name of a slot, of any kind and namespace, shares its slot's counter: at most one
  // counter per slot and prefix, whatever the number of names.
  std::set<std::string> counters;
  for (int n = 0; n < 100000; ++n)
    counters.insert(lock.fence_counter_key(std::to_string(n)));
  EXPECT_LE(counters.size(), std::size_t{kClusterSlots});
  const std::string shared = lock.fence_counter_key("a");
  EXPECT_EQ(per_slot_key("pfx:Fences", "any key of {that} slot"),
            per_slot_key("pfx:Fences", "that"));
  EXPECT_EQ(shared, per_slot_key("pfx:Fences", lock.key("a")));
  EXPECT_EQ(lock.server_fence_counter_key(), "pfx:Fences") << "a single server's one counter";
  const auto other_prefix = Lock<std::string>{"jobs", 1s, "other"}.with_fencing();
  EXPECT_NE(other_prefix.fence_counter_key("a"), shared);
}

}  // namespace
}  // namespace leasehold
