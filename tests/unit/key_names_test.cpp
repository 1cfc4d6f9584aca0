// The kinds' name_of_key(): the name whose lease a key is, read back from the key layout
// (docs/keys.md), with the %-escaping of braces undone; any other key is no lease.
#include <gtest/gtest.h>

#include "leasehold/lock.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"

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
  EXPECT_EQ(rw.name_of_key(rw.fence_key(kAwkwardName)), std::nullopt) << "a counter is no lease";
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
  EXPECT_EQ(permits.name_of_key(permits.fence_key(kAwkwardName)), std::nullopt);
}

TEST(KeyNames, ALocksKeyNamesItsNameFencedOrNot) {
  const Lock<std::string> plain{"cron", 1s, "pfx"};
  EXPECT_EQ(plain.name_of_key(plain.key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(plain.name_of_key("pfx:Lock:other:x"), std::nullopt);
  EXPECT_EQ(plain.name_of_key("pfx:Lock:cron:"), std::nullopt);
  const auto fenced = plain.with_fencing();
  EXPECT_EQ(fenced.name_of_key(fenced.key(kAwkwardName)), kAwkwardName);
  EXPECT_EQ(fenced.name_of_key(fenced.fence_key(kAwkwardName)), std::nullopt);
}

}  // namespace
}  // namespace leasehold
