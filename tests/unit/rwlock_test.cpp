// RwLock<N> without a server: keys and their cluster slots for hostile names, reply parsing.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "leasehold/rwlock.hpp"
#include "leasehold/slot.hpp"
#include "scripts.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

constexpr RwLock<std::string> kCatalog{"catalog", 10s};

TEST(ClusterSlots, MatchKnownValues) {
  // CRC16/XMODEM check value, and slots Redis Cluster documents or computes (CLUSTER KEYSLOT).
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(key_slot("123456789"), 0x31C3 % 16384);
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(hash_tag("foo{}{bar}"), "foo{}{bar}");  // an empty tag does not count
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(hash_tag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(key_slot(""), 0);
}

TEST(RwLockKeys, FollowTheDocumentedLayout) {
  EXPECT_EQ(kCatalog.writer_key("books"), "leasehold:RwLock:{catalog:books}:w");
  EXPECT_EQ(kCatalog.readers_key("books"), "leasehold:RwLock:{catalog:books}:r");
  EXPECT_EQ(kCatalog.intent_key("books"), "leasehold:RwLock:{catalog:books}:i");
  EXPECT_EQ(kCatalog.writer_key("a{b}c%"), "leasehold:RwLock:{catalog:a%7Bb%7Dc%25}:w");
}

const std::vector<std::string>& hostile_names() {
  static const std::vector<std::string> names = {"",
                                                 "{",
                                                 "}",
                                                 "{}",
                                                 "}{",
                                                 "{x}",
                                                 ":",
                                                 "a:b",
                                                 "%",
                                                 "%7B",
                                                 "%7D",
                                                 "%25",
                                                 "{%7B}",
                                                 "\xff\xfe",
                                                 "x}y{",
                                                 "}}",
                                                 "{{",
                                                 std::string(1, '\0'),
                                                 std::string("a\0}", 3),
                                                 std::string(1000, '}')};
  return names;
}

TEST(RwLockKeys, EveryKeyOfOneNameSharesOneSlotForEveryName) {
  for (const auto& name : hostile_names()) {
    const auto slot = key_slot(kCatalog.writer_key(name));
    EXPECT_EQ(key_slot(kCatalog.readers_key(name)), slot) << "name size " << name.size();
    EXPECT_EQ(key_slot(kCatalog.intent_key(name)), slot) << "name size " << name.size();
    // The tag is the whole "{namespace:name}": names spread over slots instead of piling up.
    std::string escaped;
    detail::append_escaped(escaped, name);
    EXPECT_EQ(hash_tag(kCatalog.writer_key(name)), "catalog:" + escaped);
  }
}

TEST(RwLockKeys, DistinctNamesNeverShareAKey) {
  std::set<std::string> keys;
  for (const auto& name : hostile_names())
    keys.insert(kCatalog.writer_key(name));
  EXPECT_EQ(keys.size(), hostile_names().size());
  // Nor do a Lock and an RwLock of the same namespace and name.
  EXPECT_NE(Lock<std::string>("catalog", 10s).key("x"), kCatalog.writer_key("x"));
}

TEST(RwLockQueries, AreRetrySafeScriptsThatTakeNoClientTime) {
  const auto read = kCatalog.try_read("books");
  const auto write = kCatalog.try_write("books");
  EXPECT_TRUE(read.request().is_script());
  EXPECT_TRUE(read.request().is_retry_safe());
  EXPECT_TRUE(write.request().is_retry_safe());
  // try_read: 3 keys, then id and ttl only.
  const Request request = read.request();
  const std::string_view bytes = request.bytes();
  EXPECT_NE(bytes.find("$1\r\n3\r\n"), std::string::npos);
  EXPECT_NE(bytes.find(read.id().hex()), std::string::npos);
  EXPECT_NE(bytes.find("$5\r\n10000\r\n"), std::string::npos);
}

TEST(RwLockQueries, ParseGrantsAndRefusals) {
  const auto read = kCatalog.try_read("books");
  const Clock::time_point sent{Clock::duration(1'000'000'000)};
  auto granted = read.parse(Reply::make_integer(1), Timing{sent, sent + 1ms});
  ASSERT_TRUE(granted->has_value());
  EXPECT_EQ((*granted)->id(), read.id());
  EXPECT_LE((*granted)->deadline(), sent + 10s);
  auto refused = read.parse(Reply::make_integer(0), Timing{sent, sent + 1ms});
  EXPECT_FALSE(refused->has_value());
  EXPECT_EQ(read.parse(Reply::make_nil(), Timing{sent, sent}).error(), errc::unexpected_reply);
}

// The acquire hands each token its kind of lease: a reader's release and extend run the reader
// scripts on both keys, a writer's the writer scripts, a Lock's the lock scripts on its key (and,
// for the release, on its queue, to tell the waiters).
TEST(RwLockTokens, ReleaseAndExtendByTheScriptsOfTheirAcquire) {
  constexpr Lock<std::string> kInvoices{"invoice", 10s};
  const Clock::time_point sent{Clock::duration(1'000'000'000)};
  const Timing timing{sent, sent + 1ms};
  auto read = kCatalog.try_read("books").parse(Reply::make_integer(1), timing);
  auto write = kCatalog.try_write("books").parse(Reply::make_integer(1), timing);
  auto lock = kInvoices.try_lock("7").parse(Reply::make_nil(), timing);
  ASSERT_TRUE(read->has_value() && write->has_value() && lock->has_value());
  const ReadToken<RwLock<std::string>>& reader = **read;
  const LockToken<RwLock<std::string>>& writer = **write;
  const LockToken<Lock<std::string>>& holder = **lock;
  const auto uses = [](const Request& request, const Script& script) {
    return request.bytes().find(script.sha1()) != std::string_view::npos;
  };
  EXPECT_TRUE(uses(reader.release().request(), detail::rw_read_release_script()));
  EXPECT_TRUE(uses(reader.extend().request(), detail::rw_read_extend_script()));
  EXPECT_TRUE(uses(writer.release().request(), detail::rw_write_release_script()));
  EXPECT_TRUE(uses(writer.extend().request(), detail::rw_write_extend_script()));
  EXPECT_TRUE(uses(holder.release().request(), detail::lock_release_script()));
  EXPECT_TRUE(uses(holder.extend().request(), detail::lock_extend_script()));
  // Both of an RwLock's keys (one slot); a Lock's key alone, even in its release (its waiters
  // mark the key); an Election's release adds its observers' hash. The channels' names are sent
  // only for a key whose braces make no tag: for the others the script builds them as
  // same_slot_key() does.
  const std::string readers_key = kCatalog.readers_key("books");
  EXPECT_NE(reader.release().request().bytes().find(readers_key), std::string_view::npos);
  EXPECT_NE(writer.extend().request().bytes().find(readers_key), std::string_view::npos);
  const std::string plain_key = kInvoices.key("7");
  EXPECT_NE(holder.release().request().bytes().find("$1\r\n1\r\n"), std::string_view::npos);
  EXPECT_EQ(holder.release().request().bytes().find(":observed"), std::string_view::npos);
  const Request observed_release =
      detail::lock_release_request(plain_key, "0123456789abcdef0123456789abcdef", true);
  EXPECT_NE(observed_release.bytes().find("$1\r\n2\r\n"), std::string_view::npos);
  EXPECT_NE(observed_release.bytes().find(detail::observed_key(plain_key)), std::string_view::npos);
  EXPECT_EQ(holder.release().request().bytes().find(detail::queue_key(plain_key)),
            std::string_view::npos);
  EXPECT_EQ(holder.release().request().bytes().find(":released"), std::string_view::npos);
  EXPECT_EQ(holder.release().request().bytes().find(":changed"), std::string_view::npos);
  EXPECT_EQ(detail::released_channel(plain_key), plain_key + ":released{" + plain_key + "}");
  const std::string id = "0123456789abcdef0123456789abcdef";
  const std::string tagged_key = kInvoices.with_fencing().key("7");
  EXPECT_EQ(detail::released_channel(tagged_key), tagged_key + ":released");
  EXPECT_TRUE(uses(detail::lock_release_request(tagged_key, id), detail::lock_release_script()));
  const Request braces = detail::lock_release_request("leasehold:a{b", id);
  EXPECT_TRUE(uses(braces, detail::lock_release_script()));
  EXPECT_NE(braces.bytes().find(detail::released_channel("leasehold:a{b")), std::string_view::npos);
  EXPECT_NE(holder.extend().request().bytes().find("$1\r\n1\r\n"), std::string_view::npos);
  EXPECT_TRUE(writer.extend().request().is_lease_grant());
  EXPECT_FALSE(reader.release().request().is_lease_grant());
  std::ostringstream printed;
  printed << reader << ' ' << writer;
  EXPECT_EQ(printed.str().rfind("ReadToken(", 0), 0u) << printed.str();
  EXPECT_NE(printed.str().find(" LockToken("), std::string::npos) << printed.str();
}

TEST(RwLockValidation, WriterPreferenceNeedsAValidIntentTtl) {
  EXPECT_EQ(kCatalog.writer_intent_ttl(), 0ms);
  constexpr auto preferring = RwLock<std::string>{"catalog", 10s}.with_writer_preference(500ms);
  EXPECT_EQ(preferring.writer_intent_ttl(), 500ms);
  EXPECT_THROW(kCatalog.with_writer_preference(0ms), Error);
}

}  // namespace
}  // namespace leasehold
