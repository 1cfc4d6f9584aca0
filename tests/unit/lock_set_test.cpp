// LockSet without a server: the order of its names, its try as one script or (names of several
// slots, on a cluster) one per slot's names, and how the parts' replies are read.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "leasehold/detail/lease_kind.hpp"
#include "leasehold/lock_set.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

constexpr auto kFenced = Lock<std::string>{"order", 10s}.with_fencing();

Reply integers(std::initializer_list<long long> values) {
  std::vector<Reply> elements;
  for (const long long value : values)
    elements.push_back(Reply::make_integer(value));
  return Reply::make_array(std::move(elements));
}

const Timing kTiming{Clock::time_point(Clock::duration(1'000'000'000)),
                     Clock::time_point(Clock::duration(1'001'000'000))};

// Fenced names have keys of their own slots: three names, three slots.
TEST(LockSetTry, NamesOfSeveralSlotsAreOneScriptWithOnePartPerSlot) {
  const LockSet set(kFenced, {"c", "a", "b", "a"});
  ASSERT_EQ(set.names().size(), 3u) << "duplicates removed";
  std::set<std::uint16_t> slots;
  for (std::size_t i = 0; i < set.keys().size(); ++i) {
    slots.insert(key_slot(set.keys()[i]));
    if (i > 0) {
      EXPECT_LT(key_slot(set.keys()[i - 1]), key_slot(set.keys()[i])) << "ordered by slot";
    }
  }
  ASSERT_EQ(slots.size(), 3u);
  const detail::LockSetTry attempt = set.attempt();
  const Request whole = attempt.request();
  // A single server runs the one script, each fence on its one counter; a cluster the form that
  // counts on the slots' counters, in parts.
  EXPECT_TRUE(whole.parts().empty());
  EXPECT_NE(whole.bytes().find("\r\n" + kFenced.server_fence_counter_key() + "\r\n"),
            std::string_view::npos);
  ASSERT_TRUE(whole.is_retry_safe() && whole.is_lease_grant());
  const Request& request = whole.cluster_form();
  EXPECT_TRUE(request.sent_in_parts_on_cluster());
  ASSERT_EQ(request.parts().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const Request& part = request.parts()[i];
    EXPECT_EQ(part.keys(), Request::Keys::one_slot);
    EXPECT_EQ(part.slot(), key_slot(set.keys()[i]));
    EXPECT_TRUE(part.is_retry_safe());
    EXPECT_TRUE(part.is_lease_grant());
    EXPECT_NE(part.bytes().find(set.keys()[i]), std::string_view::npos);
    EXPECT_NE(part.bytes().find(kFenced.fence_counter_key(set.names()[i])), std::string_view::npos);
  }
  // Names of one slot: the one script alone.
  const LockSet together(Lock<std::string>{"order", 10s}, {"{7}a", "{7}b"});
  EXPECT_TRUE(together.attempt().request().parts().empty());
}

TEST(LockSetTry, ThePartsRepliesMakeOneLeaseWithTheFencesInTheSetsOrder) {
  const LockSet set(kFenced, {"a", "b", "c"});
  const detail::LockSetTry attempt = set.attempt();
  const Reply parts = Reply::make_array({integers({1, 7}), integers({1, 3}), integers({1, 9})});
  EXPECT_FALSE(attempt.leftover(parts)) << "every part took its names: nothing to give back";
  const Result<detail::LockSetTried> tried = attempt.parse(parts, kTiming);
  ASSERT_TRUE(tried);
  ASSERT_TRUE(tried->lease);
  EXPECT_EQ(tried->lease->fences, (std::vector<std::uint64_t>{7, 3, 9}));
  EXPECT_EQ(tried->lease->fence, 7u);
  // The whole script's reply reads the same.
  const Result<detail::LockSetTried> whole = attempt.parse(integers({1, 7, 3, 9}), kTiming);
  ASSERT_TRUE(whole && whole->lease);
  EXPECT_EQ(whole->lease->fences, tried->lease->fences);
  EXPECT_FALSE(attempt.leftover(integers({0, 2})));
}

TEST(LockSetTry, ABusyPartMakesTheTryBusyAndWhatTheOthersTookIsGivenBack) {
  const LockSet set(kFenced, {"a", "b", "c"});
  const detail::LockSetTry attempt = set.attempt();
  const Reply busy_second =
      Reply::make_array({integers({1, 7}), integers({0, 1}), integers({1, 9})});
  const Result<detail::LockSetTried> tried = attempt.parse(busy_second, kTiming);
  ASSERT_TRUE(tried);
  EXPECT_FALSE(tried->lease);
  EXPECT_EQ(tried->busy, 1u) << "the place of the busy name in the set";
  const std::optional<Request> given_back = attempt.leftover(busy_second);
  ASSERT_TRUE(given_back);
  EXPECT_EQ(given_back->parts().size(), 3u) << "a release of every name, one part per slot";
  EXPECT_NE(given_back->bytes().find(attempt.value()), std::string_view::npos);

  // Nothing taken anywhere: nothing to give back.
  EXPECT_FALSE(
      attempt.leftover(Reply::make_array({integers({0, 1}), integers({0, 1}), integers({0, 1})})));
  // An error reply from one part is the try's error, and the others' names are given back.
  const Reply failed = Reply::make_array(
      {integers({1, 7}), Reply::make_error("OOM command not allowed"), integers({1, 9})});
  const Result<detail::LockSetTried> error = attempt.parse(failed, kTiming);
  EXPECT_FALSE(error);
  EXPECT_EQ(error.error(), errc::out_of_memory);
  EXPECT_TRUE(attempt.leftover(failed));
  // A parts reply of the wrong shape is an unexpected reply.
  EXPECT_EQ(attempt.parse(Reply::make_array({integers({1, 7})}), kTiming).error(),
            errc::unexpected_reply);
}

TEST(LeaseOfSeveralParts, IsHeldOnlyWhenEveryPartHoldsIt) {
  detail::LeaseState set("a", LeaseId::generate(), 10s, kTiming.received);
  set.more_keys = {"b", "c"};
  set.slot_parts = 3;
  EXPECT_TRUE(*detail::held_in_every_part(Reply::make_integer(1), set));
  EXPECT_FALSE(*detail::held_in_every_part(Reply::make_integer(0), set));
  EXPECT_TRUE(*detail::held_in_every_part(integers({1, 1, 1}), set));
  EXPECT_FALSE(*detail::held_in_every_part(integers({1, 0, 1}), set));
  EXPECT_FALSE(detail::held_in_every_part(
      Reply::make_array({Reply::make_integer(1), Reply::make_error("ERR x")}), set));
  EXPECT_EQ(detail::held_in_every_part(integers({}), set).error(), errc::unexpected_reply);
  EXPECT_EQ(detail::held_in_every_part(integers({1, 1}), set).error(), errc::unexpected_reply)
      << "one reply per slot's part, no fewer";
  // Lost in one part, held in another: the others give it back. An error proves no loss.
  EXPECT_TRUE(detail::lost_in_some_part(integers({1, 0, 1}), set));
  EXPECT_FALSE(detail::lost_in_some_part(integers({0, 0, 0}), set));
  EXPECT_FALSE(detail::lost_in_some_part(integers({1, 1, 1}), set));
  EXPECT_FALSE(detail::lost_in_some_part(integers({1, 0}), set)) << "not this lease's reply";
  EXPECT_FALSE(detail::lost_in_some_part(Reply::make_integer(0), set));
  EXPECT_FALSE(detail::lost_in_some_part(
      Reply::make_array(
          {Reply::make_integer(1), Reply::make_error("ERR x"), Reply::make_integer(1)}),
      set));
}

// A lease on one name, or on names of one slot, is never sent in parts: an array, even of 1s, is
// not its reply.
TEST(LeaseOfSeveralParts, ALeaseOfOneSlotTakesNoArray) {
  const detail::LeaseState one("a", LeaseId::generate(), 10s, kTiming.received);
  EXPECT_TRUE(*detail::held_in_every_part(Reply::make_integer(1), one));
  EXPECT_EQ(detail::held_in_every_part(integers({1}), one).error(), errc::unexpected_reply);
  EXPECT_FALSE(detail::lost_in_some_part(integers({1, 0}), one));
  // A set's lease knows how many slots its names take.
  const LockSet spread(kFenced, {"a", "b", "c"});
  const Result<detail::LockSetTried> tried =
      spread.attempt().parse(integers({1, 7, 3, 9}), kTiming);
  ASSERT_TRUE(tried && tried->lease);
  EXPECT_EQ(tried->lease->slot_parts, 3u);
  const LockSet together(Lock<std::string>{"order", 10s}, {"{7}a", "{7}b"});
  const detail::LockSetTry one_slot = together.attempt();
  const Result<detail::LockSetTried> taken = one_slot.parse(integers({1, 0, 0}), kTiming);
  ASSERT_TRUE(taken && taken->lease) << taken.detail();
  EXPECT_EQ(taken->lease->slot_parts, 0u);
  EXPECT_EQ(one_slot.parse(Reply::make_array({integers({1, 0, 0})}), kTiming).error(),
            errc::unexpected_reply)
      << "names of one slot get no parts reply";
}

}  // namespace
}  // namespace leasehold
