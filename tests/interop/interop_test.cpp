// leasehold's raw keys against other clients' real locks on the same key, on a private
// redis-server: redis-py's Lock and node-redlock (one instance) run as child processes, one step
// each, and every test runs against both. Exclusion both ways, releases and extensions that only
// the holder's value can make, and a leasehold waiter that polls a foreign lock without touching
// it. The mixed torture is in interop_torture_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <regex>
#include <string>

#include "driver_process.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "other_client.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using interop::OtherClient;
using interop::OtherClientKind;
using testing::command_calls;
using testing::eventually;

// Bounds for a loaded 2-core machine under a sanitizer: they only have to tell "soon" from
// "never".
constexpr auto kSoon = 5s;

class InteropTest : public testing::SharedServerTest,
                    public ::testing::WithParamInterface<OtherClientKind> {
 protected:
  void SetUp() override {
    try {
      version_ = other_.check();
    } catch (const std::exception& error) {
      FAIL() << GetParam().name << " cannot run: " << error.what();
    }
    // A test's keys hold its own prefix, so that the check for stray keys sees only its own.
    ASSERT_EQ(keys_of_this_test(), std::vector<std::string>{});
  }

  std::string get(const std::string& key) const {
    const Reply reply = server_->command({"GET", key});
    return reply.is_nil() ? "(nil)" : reply.str;
  }
  long long pttl(const std::string& key) const { return server_->command({"PTTL", key}).integer; }
  // Every key whose name holds this test's prefix: a waiter's queue or mark would show here.
  std::vector<std::string> keys_of_this_test() const {
    std::vector<std::string> keys;
    for (const auto& element : server_->command({"KEYS", "*" + prefix_ + "*"}).elements)
      keys.push_back(element.str);
    return keys;
  }
  static bool is_bare_id(const std::string& value) {
    return std::regex_match(value, std::regex("[0-9a-f]{32}"));
  }

  std::string prefix_ = "interop" + std::to_string(unique_number()) + "-";
  std::string key_ = prefix_ + "invoice:42";
  interop::TempDir scratch_{"interop"};
  OtherClient other_{GetParam(), server_->tcp_url(), scratch_.path()};
  std::string version_;
  Client redis_{server_->unix_url()};
};

TEST_P(InteropTest, TheirLockKeepsLeaseholdOut) {
  const auto theirs = other_.acquire(key_, 30s);
  ASSERT_TRUE(theirs) << "the key was free";
  EXPECT_EQ(get(key_), *theirs);

  const RawLock lock{10s};
  EXPECT_FALSE(redis_.process(lock.try_lock(key_))) << "busy: " << GetParam().name << " holds it";

  Locker locker(redis_, raw_keys);
  ASSERT_TRUE(locker.raw_keys());
  EXPECT_EQ(locker.key(key_), key_);
  bool ran = false;
  EXPECT_THROW(locker.with_lock(key_, [&] { ran = true; }, {.ttl = 10s, .retry_attempts = 0}),
               AcquireError);
  EXPECT_FALSE(ran);

  EXPECT_EQ(get(key_), *theirs) << "their value untouched";
  EXPECT_GT(pttl(key_), 20000) << "and its TTL";
  EXPECT_EQ(keys_of_this_test(), std::vector<std::string>{key_}) << "nothing else written";
  EXPECT_TRUE(other_.release(key_, *theirs));
  EXPECT_EQ(get(key_), "(nil)");
}

TEST_P(InteropTest, LeaseholdLockKeepsThemOut) {
  const RawLock lock{30s};
  auto token = redis_.process(lock.try_lock(key_));
  ASSERT_TRUE(token);
  EXPECT_EQ(token->key(), key_) << "the key as it is given";
  EXPECT_TRUE(is_bare_id(token->value())) << "a bare id, no holder identity: " << token->value();
  EXPECT_EQ(get(key_), token->value());
  EXPECT_FALSE(token->fence());
  EXPECT_EQ(other_.acquire(key_, 10s), std::nullopt) << "busy: leasehold holds it";
  EXPECT_EQ(get(key_), token->value());
  EXPECT_TRUE(redis_.process(token->release()));

  // The same from inside a Locker's with_lock on the raw key.
  Locker locker(redis_, raw_keys);
  std::optional<std::string> theirs_inside;
  std::string value_inside;
  locker.with_lock(key_,
                   [&] {
                     value_inside = get(key_);
                     theirs_inside = other_.acquire(key_, 10s);
                   },
                   {.ttl = 30s, .retry_attempts = 0});
  EXPECT_TRUE(is_bare_id(value_inside)) << value_inside;
  EXPECT_EQ(theirs_inside, std::nullopt) << "busy inside with_lock";
  EXPECT_EQ(get(key_), "(nil)") << "with_lock released it";
  const auto theirs = other_.acquire(key_, 10s);
  EXPECT_TRUE(theirs) << "free after leasehold's release";
  if (theirs) {
    EXPECT_TRUE(other_.release(key_, *theirs));
  }
}

TEST_P(InteropTest, TheyReleaseOnlyTheirOwnLock) {
  // A value of their own making, for a lock they do not hold: their lock on another key.
  const std::string other_key = key_ + ":elsewhere";
  const auto their_value = other_.acquire(other_key, 30s);
  ASSERT_TRUE(their_value);

  const RawLock lock{30s};
  auto token = redis_.process(lock.try_lock(key_));
  ASSERT_TRUE(token);
  EXPECT_FALSE(other_.release(key_, *their_value)) << "not their lock";
  EXPECT_EQ(get(key_), token->value()) << "leasehold's lock survives";
  EXPECT_FALSE(other_.extend(key_, *their_value, 60s)) << "nor theirs to extend";
  EXPECT_EQ(get(key_), token->value());
  EXPECT_LE(pttl(key_), 30000) << "the TTL is leasehold's";
  EXPECT_TRUE(redis_.process(token->release()));
  EXPECT_EQ(get(key_), "(nil)");
  EXPECT_TRUE(other_.release(other_key, *their_value));
}

TEST_P(InteropTest, LeaseholdReleasesOnlyItsOwnLock) {
  const auto theirs = other_.acquire(key_, 30s);
  ASSERT_TRUE(theirs);
  ASSERT_TRUE(is_bare_id(*theirs)) << "32 hex digits, as a leasehold token's value: " << *theirs;

  const RawLock lock{5s};
  const auto stranger = lock.adopt(key_, "0123456789abcdef0123456789abcdef");
  EXPECT_FALSE(redis_.process(stranger.release())) << "not leasehold's lock";
  EXPECT_EQ(get(key_), *theirs) << "their lock survives";
  EXPECT_FALSE(redis_.process(stranger.extend()));
  EXPECT_EQ(get(key_), *theirs);
  EXPECT_GT(pttl(key_), 20000) << "their TTL, not leasehold's 5 s";

  // Their value adopted is their lock: leasehold's compare-and-delete is theirs too.
  const auto adopted = lock.adopt(key_, *theirs);
  EXPECT_TRUE(redis_.process(adopted.release()));
  EXPECT_EQ(get(key_), "(nil)");
  EXPECT_FALSE(other_.release(key_, *theirs)) << "gone";
}

TEST_P(InteropTest, TheirExtensionFailsOnceLeaseholdTookOver) {
  // Short, yet long enough for redlock, which counts a lock granted after its TTL less a drift
  // as not granted.
  const auto theirs = other_.acquire(key_, 1s);
  ASSERT_TRUE(theirs);
  ASSERT_TRUE(eventually([&] { return get(key_) == "(nil)"; }, 10s)) << "their lease ran out";

  const RawLock lock{20s};
  auto token = redis_.process(lock.try_lock(key_));
  ASSERT_TRUE(token) << "free once theirs expired";
  EXPECT_FALSE(other_.extend(key_, *theirs, 60s)) << "their extension after the takeover";
  EXPECT_EQ(get(key_), token->value()) << "leasehold still holds it";
  EXPECT_LE(pttl(key_), 20000) << "with leasehold's TTL, not their 60 s";
  EXPECT_FALSE(other_.release(key_, *theirs)) << "nor can they release it";
  EXPECT_EQ(get(key_), token->value());
  EXPECT_TRUE(redis_.process(token->extend())) << "leasehold's own extension still works";
  EXPECT_TRUE(redis_.process(token->release()));
}

TEST_P(InteropTest, LeaseholdExtensionFailsOnceTheyTookOver) {
  const RawLock short_lock{300ms};
  auto token = redis_.process(short_lock.try_lock(key_));
  ASSERT_TRUE(token);
  ASSERT_TRUE(eventually([&] { return get(key_) == "(nil)"; }, 10s)) << "the lease ran out";

  const auto theirs = other_.acquire(key_, 20s);
  ASSERT_TRUE(theirs) << "free once leasehold's expired";
  EXPECT_FALSE(redis_.process(token->extend())) << "leasehold's extension after the takeover";
  EXPECT_EQ(get(key_), *theirs) << "they still hold it";
  EXPECT_GT(pttl(key_), 1000) << "with their TTL, not leasehold's 300 ms";
  EXPECT_FALSE(redis_.process(token->release())) << "nor can leasehold release it";
  EXPECT_EQ(get(key_), *theirs);
  EXPECT_TRUE(other_.extend(key_, *theirs, 20s)) << "their own extension still works";
  EXPECT_TRUE(other_.release(key_, *theirs));
}

TEST_P(InteropTest, KeysWithBracesAndSpacesAreTheirsAsGiven) {
  // A hash tag, braces that make none, a space: leasehold neither escapes nor tags the key.
  for (const std::string& key :
       {prefix_ + "{tenant 7}:invoice:42", prefix_ + "a{b}c}:x{", prefix_ + "plain key"}) {
    SCOPED_TRACE(key);
    const RawLock lock{10s};
    auto token = redis_.process(lock.try_lock(key));
    ASSERT_TRUE(token);
    EXPECT_EQ(get(key), token->value());
    EXPECT_EQ(other_.acquire(key, 10s), std::nullopt);
    EXPECT_TRUE(redis_.process(token->extend()));
    EXPECT_TRUE(redis_.process(token->release()));
    const auto theirs = other_.acquire(key, 10s);
    ASSERT_TRUE(theirs);
    EXPECT_FALSE(redis_.process(lock.try_lock(key)));
    EXPECT_EQ(get(key), *theirs);
    EXPECT_TRUE(other_.release(key, *theirs));
  }
  EXPECT_EQ(keys_of_this_test(), std::vector<std::string>{});
}

// While a leasehold waiter polls their lock, the key keeps their value and nothing else is
// written; their release (a compare-and-delete of that value) succeeds, and the waiter gets the
// key soon after. `wait` starts the waiter and yields the value it found once it held the key.
template <class Waiter>
void check_waiter(const testing::RedisServer& server, const OtherClient& other,
                  const std::string& key, const std::string& prefix, Waiter wait) {
  const auto theirs = other.acquire(key, 30s);
  ASSERT_TRUE(theirs);
  const auto sets_before = command_calls(server, "set");
  std::atomic<std::chrono::steady_clock::time_point> got_it{};
  std::future<std::string> waiter = std::async(std::launch::async, [&] {
    std::string value = wait();
    got_it = std::chrono::steady_clock::now();
    return value;
  });
  // A waiter's try is one SET NX: a few of them, then look at the key.
  EXPECT_TRUE(eventually([&] { return command_calls(server, "set") >= sets_before + 5; }, 20s))
      << "the waiter polls";
  const auto value = server.command({"GET", key});
  EXPECT_EQ(value.str, *theirs) << "their value was never rewritten: " << value;
  std::vector<std::string> keys;
  for (const auto& element : server.command({"KEYS", "*" + prefix + "*"}).elements)
    keys.push_back(element.str);
  EXPECT_EQ(keys, std::vector<std::string>{key}) << "no queue, no mark, no channel state";
  ASSERT_EQ(waiter.wait_for(0s), std::future_status::timeout) << "it waits while they hold it";

  const auto releasing = std::chrono::steady_clock::now();
  const bool released = other.release(key, *theirs);
  const auto released_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(released) << "their value was still there to compare";
  ASSERT_EQ(waiter.wait_for(30s), std::future_status::ready);
  const std::string held = waiter.get();
  EXPECT_TRUE(std::regex_match(held, std::regex("[0-9a-f]{32}"))) << held;
  EXPECT_NE(held, *theirs);
  EXPECT_GE(got_it.load(), releasing) << "not before their release";
  EXPECT_LT(got_it.load() - released_at, kSoon) << "soon after it";
}

TEST_P(InteropTest, RawLockWaiterPollsTheirLockUntouchedAndGetsItAfterTheirRelease) {
  const RawLock lock{10s};
  check_waiter(*server_, other_, key_, prefix_, [&] {
    auto token = lock_for(redis_, lock, key_, 60s, WaitOptions{.poll = 20ms});
    if (!token)
      return std::string("(not in time)");
    const std::string held = get(key_);
    const bool released = redis_.process(token->release());
    return released && held == token->value() ? held : "(lost: " + held + ")";
  });
  EXPECT_EQ(get(key_), "(nil)");
}

TEST_P(InteropTest, LockerWaiterPollsTheirLockUntouchedAndGetsItAfterTheirRelease) {
  Locker locker(redis_, raw_keys);
  check_waiter(*server_, other_, key_, prefix_, [&] {
    return locker.with_lock(key_, [&] { return get(key_); },
                            {.ttl = 10s, .retry_attempts = 3000, .retry_delay = 20ms});
  });
  EXPECT_EQ(get(key_), "(nil)") << "with_lock released it";
}

TEST_P(InteropTest, MutexOnARawKeyPollsTheirLockUntouchedAndGetsItAfterTheirRelease) {
  Locker locker(redis_, raw_keys);
  Mutex mutex(locker, key_, {.ttl = 10s, .waiting = {.poll = 20ms}});
  check_waiter(*server_, other_, key_, prefix_, [&] {
    std::scoped_lock hold(mutex);
    return get(key_);
  });
  EXPECT_FALSE(mutex.lost());
  EXPECT_EQ(get(key_), "(nil)") << "unlock() released it";
}

INSTANTIATE_TEST_SUITE_P(Clients, InteropTest,
                         ::testing::Values(interop::redis_py_client(), interop::redlock_client()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace leasehold
