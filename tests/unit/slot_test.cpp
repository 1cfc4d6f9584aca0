// Hash slots as Redis Cluster computes them, and keys derived from a key in the same slot.
#include "leasehold/slot.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace leasehold {
namespace {

TEST(KeySlot, MatchesRedisClusterForKnownKeys) {
  // CLUSTER KEYSLOT on a Redis 7 cluster.
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(hash_tag("foo{}{bar}"), "foo{}{bar}");
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar");
}

TEST(SameSlotKey, KeepsTheSlotOfAnyKeyAndReadsPlainlyForTheUsualOnes) {
  EXPECT_EQ(same_slot_key("leasehold:Lock:jobs:import", ":queue"),
            "leasehold:Lock:jobs:import:queue{leasehold:Lock:jobs:import}");
  EXPECT_EQ(same_slot_key("leasehold:Lock:{jobs:import}", ":queue"),
            "leasehold:Lock:{jobs:import}:queue");
  EXPECT_EQ(same_slot_key("leasehold:Lock:a}b", ":queue").rfind("leasehold:Lock:a%7Db:queue{", 0),
            0u);
  const std::vector<std::string> keys = {"leasehold:Lock:jobs:import",
                                         "leasehold:Lock:{jobs:import}",
                                         "a{b",
                                         "a}b",
                                         "a{}b}",
                                         "}",
                                         "{",
                                         "{}",
                                         "",
                                         "x{y}z}",
                                         std::string("bin\0ary}", 8)};
  for (const std::string& key : keys) {
    const std::string derived = same_slot_key(key, ":queue");
    EXPECT_EQ(key_slot(derived), key_slot(key)) << "key '" << key << "' -> '" << derived << "'";
    EXPECT_NE(derived, key);
    EXPECT_NE(derived.find(":queue"), std::string::npos);
    if (!key.empty() && key[0] != '{' && key[0] != '}') {
      EXPECT_EQ(derived[0], key[0]) << "'" << derived << "' does not start with the key";
    }
  }
}

TEST(SameSlotKey, DifferentKeysOrSuffixesGiveDifferentKeys) {
  EXPECT_NE(same_slot_key("a}b", ":q"), same_slot_key("a}c", ":q"));
  EXPECT_NE(same_slot_key("a{b", ":q"), same_slot_key("a%7Bb", ":q"));
  EXPECT_NE(same_slot_key("k", ":q"), same_slot_key("k", ":e"));
}

}  // namespace
}  // namespace leasehold
