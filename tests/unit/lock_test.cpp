// Lock<N> without a server: keys, validation, reply parsing, lease deadlines (time as an argument).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <limits>
#include <set>

#include "leasehold/capability.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

constexpr Lock<std::uint64_t> kInvoices{"invoice", 30s};
constexpr Lock<std::string> kReports{"report", 10s, "myapp"};

TEST(LockKeys, FollowTheDocumentedLayout) {
  EXPECT_EQ(kInvoices.key(42), "leasehold:Lock:invoice:42");
  EXPECT_EQ(kReports.key("daily"), "myapp:Lock:report:daily");
  EXPECT_EQ(kInvoices.ttl(), 30s);
  EXPECT_EQ(kReports.prefix(), "myapp");
}

TEST(LockKeys, NamesAreBinarySafeAndDistinctPairsNeverShareAKey) {
  const std::vector<std::string> names = {
      "",         "a",    "a:b", ":", "{", "}", "{x}", std::string(1, '\0'), std::string("a\0b", 3),
      "\xff\xfe", "x:y:z"};
  std::set<std::string> keys;
  for (const auto& name : names)
    keys.insert(kReports.key(name));
  EXPECT_EQ(keys.size(), names.size());
  // The namespace cannot hold ':' so it ends at the first ':' after "Lock:": ("a", "b:c") and
  // ("a:b", "c") cannot both exist.
  EXPECT_THROW(Lock<std::string>("a:b", 1s), Error);
  EXPECT_EQ(kReports.key(std::string("a\0b", 3)), std::string("myapp:Lock:report:a\0b", 21));
}

TEST(LockValidation, NamespacesPrefixesAndTtlsAreCheckedBeforeAnythingIsSent) {
  auto code_of = [](auto make) {
    try {
      make();
    } catch (const Error& e) {
      return e.code();
    }
    return std::error_code{};
  };
  EXPECT_EQ(code_of([] { Lock<std::string>("", 1s); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("has space", 1s); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("brace{", 1s); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>(std::string(65, 'a'), 1s); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("ok", 0ms); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("ok", -5ms); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("ok", kMaxTtl + 1ms); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("ok", 1s, "bad{prefix"); }), errc::invalid_argument);
  EXPECT_EQ(code_of([] { Lock<std::string>("ok.v2-x_y", kMaxTtl); }), std::error_code{});
  try {
    Lock<std::string>("ok", 0ms);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TTL must be positive"), std::string::npos);
  }
}

TEST(LeaseIds, AreRandomHexAndPrintShort) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i)
    seen.insert(LeaseId::generate().hex());
  EXPECT_EQ(seen.size(), 1000u);
  const LeaseId id = LeaseId::generate();
  EXPECT_EQ(id.hex().size(), 32u);
  EXPECT_EQ(LeaseId::from_hex(id.hex()), id);
  EXPECT_EQ(id.short_hex().substr(0, 8), id.hex().substr(0, 8));
  EXPECT_LT(id.short_hex().size(), 16u);
  std::ostringstream printed;
  printed << id;
  EXPECT_EQ(printed.str().find(id.hex()), std::string::npos) << "never print a whole id";
  EXPECT_THROW(LeaseId::from_hex("xyz"), Error);
}

TEST(LeaseIds, HexDigitsAreTheHexWithoutAllocating) {
  const LeaseId id = LeaseId::from_hex("00112233445566778899aabbccddeeff");
  const LeaseId::HexDigits digits = id.hex_digits();
  EXPECT_EQ(std::string(digits.begin(), digits.end()), "00112233445566778899aabbccddeeff");
  EXPECT_EQ(id.hex(), "00112233445566778899aabbccddeeff");
}

// The bytes of the id a forked child takes first, read through a pipe.
std::array<std::uint8_t, LeaseId::kSize> first_id_of_a_forked_child() {
  std::array<std::uint8_t, LeaseId::kSize> bytes{};
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return bytes;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    const auto bytes = LeaseId::generate().bytes();
    const bool sent =
        ::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  std::size_t got = 0;
  while (child > 0 && got < bytes.size()) {
    const ssize_t n = ::read(fds[0], bytes.data() + got, bytes.size() - got);
    if (n <= 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fds[0]);
  int status = 0;
  if (child > 0)
    ::waitpid(child, &status, 0);
  EXPECT_GT(child, 0) << "fork failed";
  EXPECT_EQ(got, bytes.size()) << "the child sent no id";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return bytes;
}

// Ids come from a per-thread buffer of random bytes, which a forked child inherits: it must not
// hand out the ids its parent is about to use. Tried at two consecutive positions of the buffer,
// so that one of them is not the moment the buffer runs out (when both would refill anyway).
TEST(LeaseIds, AForkedChildNeverRepeatsItsParentsNextIds) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    (void)LeaseId::generate();
    const auto in_child = first_id_of_a_forked_child();
    const auto in_parent = LeaseId::generate().bytes();
    EXPECT_NE(in_child, in_parent) << "attempt " << attempt;
  }
}

TEST(TryLockQuery, IsOneIdempotentSetWithNxPxGet) {
  const TryLock<Lock<std::uint64_t>> query = kInvoices.try_lock(7);
  const Request request = query.request();
  EXPECT_TRUE(request.is_retry_safe());
  EXPECT_FALSE(request.is_script());
  const std::string& value = query.value();  // the id, then the holder's identity
  EXPECT_EQ(value.rfind(query.id().hex() + ";", 0), 0u) << value;
  const std::string expected = "*7\r\n$3\r\nSET\r\n$24\r\nleasehold:Lock:invoice:7\r\n$" +
                               std::to_string(value.size()) + "\r\n" + value +
                               "\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n$3\r\nGET\r\n";
  EXPECT_EQ(request.bytes(), expected);
  // Two queries for the same name carry different ids.
  EXPECT_NE(kInvoices.try_lock(7).id(), query.id());
}

TEST(TryLockQuery, ParsesEachReply) {
  const auto query = kInvoices.try_lock(7);
  const Clock::time_point sent{Clock::duration(1'000'000'000)};
  const Timing timing{sent, sent + 1ms};

  auto taken = query.parse(Reply::make_nil(), timing);
  ASSERT_TRUE(taken.has_value());
  ASSERT_TRUE(taken->has_value());
  EXPECT_EQ((*taken)->key(), "leasehold:Lock:invoice:7");
  EXPECT_EQ((*taken)->id(), query.id());

  // A retry that finds its own value holds the lock (its reply was lost the first time), even
  // marked by a waiter since; the same id with another holder's identity does not.
  auto retried = query.parse(Reply::make_string(query.value()), timing);
  ASSERT_TRUE(retried->has_value());
  auto marked =
      query.parse(Reply::make_string(query.value() + ":" + LeaseId::generate().hex()), timing);
  ASSERT_TRUE(marked->has_value());
  auto other_holder = query.parse(Reply::make_string(query.id().hex() + ";h;1;l;2"), timing);
  EXPECT_FALSE(other_holder->has_value());

  auto busy = query.parse(Reply::make_string(LeaseId::generate().hex()), timing);
  ASSERT_TRUE(busy.has_value());
  EXPECT_FALSE(busy->has_value());

  auto wrong = query.parse(
      Reply::make_error("WRONGTYPE Operation against a key holding the wrong kind of value"),
      timing);
  EXPECT_EQ(wrong.error(), errc::wrong_type);

  auto odd = query.parse(Reply::make_integer(3), timing);
  EXPECT_EQ(odd.error(), errc::unexpected_reply);
}

template <class T>
std::string written(T name) {
  std::string key = "k:";
  LockName<T>::append(key, name);
  return key;
}

TEST(LockNames, IntegersAreWrittenAsStdToStringWritesThem) {
  EXPECT_EQ(written(0), "k:" + std::to_string(0));
  EXPECT_EQ(written(-42), "k:" + std::to_string(-42));
  EXPECT_EQ(written(std::numeric_limits<long long>::min()),
            "k:" + std::to_string(std::numeric_limits<long long>::min()));
  EXPECT_EQ(written(std::numeric_limits<unsigned long long>::max()),
            "k:" + std::to_string(std::numeric_limits<unsigned long long>::max()));
  EXPECT_EQ(written(std::uint64_t{7}), "k:7");
  EXPECT_EQ(written(std::int8_t{-128}), "k:" + std::to_string(std::int8_t{-128}));
  EXPECT_EQ(written(static_cast<unsigned short>(65535)), "k:65535");
  EXPECT_EQ(written('A'), "k:" + std::to_string('A'));
  EXPECT_EQ(written(true), "k:" + std::to_string(true));
  EXPECT_EQ(written(U'\x10FFFF'), "k:" + std::to_string(U'\x10FFFF'));
  EXPECT_EQ(Lock<std::uint64_t>("invoice", 30s).key(18446744073709551615u),
            "leasehold:Lock:invoice:18446744073709551615");
}

// The client parses the reply of its own copy of the query once, as an rvalue: the key moves into
// the token. Any outcome without a token leaves the query whole, for its unknown-outcome clean-up.
TEST(TryLockQuery, AnRvalueParseMovesTheKeyOnlyIntoAToken) {
  const Clock::time_point sent{Clock::duration(1'000'000'000)};
  for (const bool fenced : {false, true}) {
    const Lock<std::string> lock = fenced ? Lock<std::string>("invoice", 30s).with_fencing()
                                          : Lock<std::string>("invoice", 30s);
    const std::string name = "a name long enough to live on the heap, not in the string";
    const auto original = lock.try_lock(name);
    const Reply granted = fenced ? Reply::make_integer(4) : Reply::make_nil();
    const Reply busy =
        fenced ? Reply::make_integer(0) : Reply::make_string(LeaseId::generate().hex());
    const std::optional<Request> cleanup = original.on_unknown_outcome();
    ASSERT_TRUE(cleanup);

    for (const Reply& reply : {busy, Reply::make_error("ERR no"), Reply::make_status("odd")}) {
      auto query = original;
      auto result = std::move(query).parse(reply, Timing{sent, sent + 1ms});
      EXPECT_FALSE(result.has_value() && result->has_value()) << reply;
      EXPECT_EQ(query.key(), lock.key(name)) << reply;
      EXPECT_EQ(query.on_unknown_outcome()->bytes(), cleanup->bytes()) << reply;
    }
    // Granted after its deadline: an unknown outcome, released with the query's own key.
    auto late = original;
    auto too_late = std::move(late).parse(granted, Timing{sent, sent + 31s});
    EXPECT_EQ(too_late.error(), errc::command_timeout);
    EXPECT_EQ(late.on_unknown_outcome()->bytes(), cleanup->bytes());

    auto query = original;
    auto taken = std::move(query).parse(granted, Timing{sent, sent + 1ms});
    ASSERT_TRUE(taken.has_value());
    ASSERT_TRUE(taken->has_value());
    EXPECT_EQ((*taken)->key(), lock.key(name));
    EXPECT_EQ((*taken)->id(), original.id());
    EXPECT_EQ((*taken)->fence(), fenced ? std::optional<std::uint64_t>(4) : std::nullopt);
    EXPECT_EQ((*taken)->id().hex(), original.id().hex());
    // The lvalue parse copies: the query keeps its key.
    auto copied = original.parse(granted, Timing{sent, sent + 1ms});
    ASSERT_TRUE(copied->has_value());
    EXPECT_EQ((*copied)->key(), lock.key(name));
    EXPECT_EQ(original.key(), lock.key(name));
    EXPECT_EQ(**copied, **taken);
  }
}

TEST(LeaseDeadline, IsNeverLaterThanTheServersExpiry) {
  // The server starts the TTL when it runs the command, never before `sent`; so its expiry is
  // never before sent + ttl. The client's deadline must be at or before that, for every TTL.
  const Clock::time_point sent{Clock::duration(123'456'789)};
  for (auto ttl : {1ms, 2ms, 3ms, 10ms, 100ms, 1000ms, 30000ms, 3600000ms,
                   std::chrono::milliseconds(kMaxTtl)}) {
    const auto query = Lock<std::string>("t", ttl).try_lock("n");
    const Clock::time_point server_expiry_at_the_earliest = sent + ttl;
    auto result = query.parse(Reply::make_nil(), Timing{sent, sent});
    if (lease_deadline(sent, ttl) <= sent) {
      // A TTL within the drift margin is over before it starts: never a token.
      EXPECT_EQ(result.error(), errc::command_timeout) << ttl.count();
      continue;
    }
    ASSERT_TRUE(result.has_value()) << ttl.count();
    ASSERT_TRUE(result->has_value()) << ttl.count();
    EXPECT_LE((*result)->deadline(), server_expiry_at_the_earliest) << ttl.count();
    EXPECT_LE((*result)->deadline(), sent + ttl - ttl / 100) << "drift margin, " << ttl.count();
    EXPECT_LE(lease_deadline(sent, ttl), server_expiry_at_the_earliest);
  }
}

TEST(LeaseDeadline, AReplyAfterTheDeadlineDoesNotCountAsHeld) {
  const auto query = Lock<std::string>("t", 100ms).try_lock("n");
  const Clock::time_point sent{Clock::duration(5'000'000'000)};
  auto on_time = query.parse(Reply::make_nil(), Timing{sent, sent + 50ms});
  EXPECT_TRUE(on_time->has_value());
  // Too late: an unknown outcome (an error, so that the client releases it), never a token.
  auto late = query.parse(Reply::make_nil(), Timing{sent, sent + 99ms});
  EXPECT_FALSE(late.has_value());
  EXPECT_EQ(late.error(), errc::command_timeout);
}

TEST(LeaseClock, CountsOnTheBootClockWhichGoesOnDuringASuspend) {
  // CLOCK_MONOTONIC (steady_clock) stops while the host is suspended; CLOCK_BOOTTIME does not.
  const auto boot_ns = [] {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  };
  const std::int64_t before = boot_ns();
  const std::int64_t reading = Clock::now().time_since_epoch().count();
  const std::int64_t after = boot_ns();
  EXPECT_LE(before, reading);
  EXPECT_LE(reading, after);
  static_assert(Clock::is_steady);
}

TEST(LeaseTiming, TheNextExtensionCountsFromTheDeadline) {
  const Clock::time_point sent{Clock::duration(3'000'000'000)};
  const auto deadline = lease_deadline(sent, 1500ms);
  // A third of the TTL after the grant (less the drift margin), whenever the keep-alive started.
  EXPECT_EQ(next_extension(deadline, 1500ms), sent + 500ms - lease_margin(1500ms));
  // A token with 382 ms left is due at once: its next extension is already in the past.
  const Clock::time_point late = deadline - 382ms;
  EXPECT_LT(next_extension(deadline, 1500ms), late);
}

TEST(LockToken, KnowsHowLongItIsValid) {
  const auto query = Lock<std::string>("t", 1000ms).try_lock("n");
  const Clock::time_point sent{Clock::duration(7'000'000'000)};
  auto token = std::move(*query.parse(Reply::make_nil(), Timing{sent, sent}).value());
  EXPECT_EQ(token.deadline(), sent + 1000ms - 12ms);
  EXPECT_EQ(token.valid_for(sent + 500ms), 1000ms - 12ms - 500ms);
  EXPECT_EQ(token.valid_for(sent + 2s), Clock::duration::zero());
  EXPECT_TRUE(token.expired(sent + 2s));
  EXPECT_FALSE(token.expired(sent));
  EXPECT_EQ(token.ttl(), 1000ms);
}

TEST(ExtendQuery, MovesTheDeadlineOnlyWhenHeldAndOnTime) {
  const auto query = Lock<std::string>("t", 1000ms).try_lock("n");
  const Clock::time_point sent{Clock::duration(9'000'000'000)};
  auto token = std::move(*query.parse(Reply::make_nil(), Timing{sent, sent}).value());
  const auto before = token.deadline();

  const auto extend = token.extend();
  EXPECT_TRUE(extend.request().is_script());
  EXPECT_TRUE(extend.request().is_retry_safe());
  EXPECT_FALSE(*extend.parse(Reply::make_integer(0), Timing{sent + 400ms, sent + 401ms}));
  EXPECT_EQ(token.deadline(), before);
  EXPECT_TRUE(*extend.parse(Reply::make_integer(1), Timing{sent + 400ms, sent + 401ms}));
  EXPECT_EQ(token.deadline(), sent + 400ms + 1000ms - 12ms);
  // An extension sent earlier but answered later never moves the deadline back.
  EXPECT_TRUE(*extend.parse(Reply::make_integer(1), Timing{sent + 100ms, sent + 402ms}));
  EXPECT_EQ(token.deadline(), sent + 400ms + 1000ms - 12ms);
}

TEST(ReleaseQuery, IsNotRetrySafeAndReadsOneOrZero) {
  const auto query = Lock<std::string>("t", 1000ms).try_lock("n");
  const Clock::time_point sent{};
  auto token = std::move(*query.parse(Reply::make_nil(), Timing{sent, sent}).value());
  const auto release = token.release();
  EXPECT_FALSE(release.request().is_retry_safe());
  EXPECT_TRUE(*release.parse(Reply::make_integer(1), {}));
  EXPECT_FALSE(*release.parse(Reply::make_integer(0), {}));
  EXPECT_EQ(release.parse(Reply::make_status("OK"), {}).error(), errc::unexpected_reply);
}

// Capabilities, as compile-time facts (the compile tests check the rejections' diagnostics).
using InvoiceLocks = Allow<Write<Lock<std::uint64_t>>>;
static_assert(AllowedBy<ReadWrite, TryLock<Lock<std::uint64_t>>>);
static_assert(!AllowedBy<ReadOnly, TryLock<Lock<std::uint64_t>>>);
static_assert(!AllowedBy<ReadOnly, ReleaseLock<Lock<std::uint64_t>>>);
static_assert(AllowedBy<InvoiceLocks, TryLock<Lock<std::uint64_t>>>);
static_assert(AllowedBy<InvoiceLocks, ExtendLock<Lock<std::uint64_t>>>);
static_assert(!AllowedBy<InvoiceLocks, TryLock<Lock<std::string>>>);
static_assert(!AllowedBy<InvoiceLocks, Command>);

}  // namespace
}  // namespace leasehold
