#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/error.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"
#include "leasehold/slot.hpp"

namespace leasehold {
namespace {

// The expected digests were computed independently, e.g. `printf %s 'return 1' | sha1sum`.
constexpr const char* kReturnOne = "return 1";
constexpr const char* kReturnOneSha1 = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";

constexpr const char* kCompareAndDelete =
    "local v = redis.call(\"GET\", KEYS[1])\n"
    "if v == ARGV[1] then\n"
    "  return redis.call(\"DEL\", KEYS[1])\n"
    "end\n"
    "return 0\n";
constexpr const char* kCompareAndDeleteSha1 = "9601170c6304ffe243b63df3abd26b1b72e6ec97";

std::string bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

TEST(Script, Sha1OfTheBodyAsRedisComputesIt) {
  EXPECT_EQ(Script(kReturnOne).sha1(), kReturnOneSha1);
  EXPECT_EQ(Script(kCompareAndDelete).sha1(), kCompareAndDeleteSha1);
  EXPECT_EQ(Script("return redis.call(\"GET\", KEYS[1])").sha1(),
            "d1ad8397c172dc0a63e271f0c4c4250ca8d5d1fb");
  EXPECT_EQ(Script("return \"h\xc3\xa9\"").sha1(), "6a522df4f4c3da810f1dc363c70d0b164f66656d");
  EXPECT_EQ(Script("").sha1(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

TEST(Script, KeepsItsBody) {
  const Script script(kCompareAndDelete);
  EXPECT_EQ(script.body(), kCompareAndDelete);
  EXPECT_EQ(script.sha1().size(), 40u);
  EXPECT_EQ(script.sha1().find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Request, CommandBytes) {
  const Request request = Request::command({"SET", "k", "v"});
  EXPECT_EQ(request.bytes(), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
  EXPECT_FALSE(request.is_script());
  EXPECT_FALSE(request.is_retry_safe());
}

TEST(Request, CommandFromStringsAndFromViewsAgree) {
  const std::vector<std::string> strings = {"HSET", "h", std::string("f\0g", 3), ""};
  const std::vector<std::string_view> views(strings.begin(), strings.end());
  const Request a = Request::command(std::span<const std::string>(strings));
  const Request b = Request::command(std::span<const std::string_view>(views));
  EXPECT_EQ(a.bytes(), b.bytes());
  EXPECT_EQ(a.bytes(),
            "*4\r\n" + bulk("HSET") + bulk("h") + bulk(std::string("f\0g", 3)) + bulk(""));
}

TEST(Request, RetrySafeIsOptIn) {
  EXPECT_FALSE(Request::command({"PING"}).is_retry_safe());
  EXPECT_TRUE(Request::command({"PING"}).retry_safe().is_retry_safe());
  EXPECT_FALSE(Request::command({"PING"}).retry_safe().retry_safe(false).is_retry_safe());
}

TEST(Request, ScriptIsEvalshaWithNumkeysKeysAndArgs) {
  const Script script(kCompareAndDelete);
  const std::vector<std::string_view> keys = {"lease:a", "lease:b"};
  const std::vector<std::string_view> args = {"token-1", "", "30000"};
  const Request request = Request::script(script, keys, args);
  EXPECT_TRUE(request.is_script());
  EXPECT_FALSE(request.is_retry_safe());
  EXPECT_EQ(request.bytes(), "*8\r\n" + bulk("EVALSHA") + bulk(kCompareAndDeleteSha1) + bulk("2") +
                                 bulk("lease:a") + bulk("lease:b") + bulk("token-1") + bulk("") +
                                 bulk("30000"));
}

TEST(Request, ScriptWithoutKeysOrArgs) {
  const Script script(kReturnOne);
  const Request request = Request::script(script, {}, {});
  EXPECT_EQ(request.bytes(), "*3\r\n" + bulk("EVALSHA") + bulk(kReturnOneSha1) + bulk("0"));
}

TEST(Request, ScriptWithArgsButNoKeys) {
  const Script script(kReturnOne);
  const std::vector<std::string_view> args = {"x"};
  const Request request = Request::script(script, {}, args);
  EXPECT_EQ(request.bytes(),
            "*4\r\n" + bulk("EVALSHA") + bulk(kReturnOneSha1) + bulk("0") + bulk("x"));
}

TEST(Request, ScriptWithManyKeysCountsThemInDecimal) {
  const Script script(kReturnOne);
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i)
    names.push_back("k" + std::to_string(i));
  const std::vector<std::string_view> keys(names.begin(), names.end());
  const Request request = Request::script(script, keys, {});
  std::string expected = "*15\r\n" + bulk("EVALSHA") + bulk(kReturnOneSha1) + bulk("12");
  for (const std::string& name : names)
    expected += bulk(name);
  EXPECT_EQ(request.bytes(), expected);
}

TEST(Request, EvalFallbackSendsTheBodyWithTheSameArguments) {
  const Script script(kCompareAndDelete);
  const std::vector<std::string_view> keys = {"lease:a"};
  const std::string binary("tok\0en", 6);
  const std::vector<std::string_view> args = {binary, "7"};
  const Request request = Request::script(script, keys, args);
  const Request fallback = request.eval_fallback();
  EXPECT_EQ(fallback.bytes(), "*6\r\n" + bulk("EVAL") + bulk(kCompareAndDelete) + bulk("1") +
                                  bulk("lease:a") + bulk(binary) + bulk("7"));
  // The fallback is what gets sent after NOSCRIPT: it must not fall back again.
  EXPECT_FALSE(fallback.is_script());
  EXPECT_FALSE(fallback.is_retry_safe());
  // The original is unchanged.
  EXPECT_TRUE(request.is_script());
  EXPECT_EQ(request.bytes(), "*6\r\n" + bulk("EVALSHA") + bulk(kCompareAndDeleteSha1) + bulk("1") +
                                 bulk("lease:a") + bulk(binary) + bulk("7"));
}

TEST(Request, EvalFallbackOfAScriptWithManyKeysAndArguments) {
  // More arguments than the formatter keeps on its stack.
  const Script script(kReturnOne);
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i)
    names.push_back("k" + std::to_string(i));
  const std::vector<std::string_view> keys(names.begin(), names.end());
  const std::vector<std::string_view> args = {"", std::string_view("\0\r\n", 3)};
  const Request request = Request::script(script, keys, args);
  std::string rest = bulk("20");
  for (const std::string& name : names)
    rest += bulk(name);
  rest += bulk("") + bulk(std::string_view("\0\r\n", 3));
  EXPECT_EQ(request.bytes(), "*25\r\n" + bulk("EVALSHA") + bulk(kReturnOneSha1) + rest);
  EXPECT_EQ(request.eval_fallback().bytes(), "*25\r\n" + bulk("EVAL") + bulk(kReturnOne) + rest);
}

TEST(Request, EvalFallbackKeepsRetrySafety) {
  const Script script(kReturnOne);
  const Request request = Request::script(script, {}, {}).retry_safe();
  EXPECT_TRUE(request.is_retry_safe());
  const Request fallback = request.eval_fallback();
  EXPECT_TRUE(fallback.is_retry_safe());
  EXPECT_EQ(fallback.bytes(), "*3\r\n" + bulk("EVAL") + bulk(kReturnOne) + bulk("0"));
}

TEST(Request, EvalFallbackOfAPlainCommandIsTheCommand) {
  const Request request = Request::command({"GET", "k"}).retry_safe();
  const Request fallback = request.eval_fallback();
  EXPECT_EQ(fallback.bytes(), request.bytes());
  EXPECT_TRUE(fallback.is_retry_safe());
  EXPECT_FALSE(fallback.is_script());
}

TEST(Request, CopiesKeepTheScriptCall) {
  const Script script(kReturnOne);
  const std::vector<std::string_view> keys = {"k"};
  const Request original = Request::script(script, keys, {});
  const Request copy = original;
  EXPECT_TRUE(copy.is_script());
  EXPECT_EQ(copy.bytes(), original.bytes());
  EXPECT_EQ(copy.eval_fallback().bytes(), original.eval_fallback().bytes());
}

// --- Command (the generic query) -----------------------------------------------------------------

static_assert(Query<Command>);

TEST(Command, RequestIsTheCommand) {
  const Command command{"SET", "k", "v"};
  EXPECT_EQ(command.request().bytes(), Request::command({"SET", "k", "v"}).bytes());
  EXPECT_FALSE(command.request().is_retry_safe());
  EXPECT_FALSE(command.request().is_script());
}

TEST(Command, FromAVectorWithBinaryArguments) {
  const std::string binary("a\0b", 3);
  const Command command(std::vector<std::string>{"SET", "k", binary});
  EXPECT_EQ(command.request().bytes(), "*3\r\n" + bulk("SET") + bulk("k") + bulk(binary));
}

TEST(Command, RetrySafeReachesTheRequest) {
  const Command safe = Command{"GET", "k"}.retry_safe();
  EXPECT_TRUE(safe.request().is_retry_safe());
  const Command unsafe = Command{"GET", "k"}.retry_safe().retry_safe(false);
  EXPECT_FALSE(unsafe.request().is_retry_safe());
}

TEST(Command, ParseReturnsAnyNonErrorReplyAsIs) {
  const Command command{"GET", "k"};
  const Timing timing{Clock::now(), Clock::now()};
  for (const Reply& reply :
       {Reply::make_nil(), Reply::make_string("v"), Reply::make_status("OK"),
        Reply::make_integer(3),
        Reply::make_array({Reply::make_error("ERR inside an array is a value")})}) {
    Result<Reply> result = command.parse(reply, timing);
    ASSERT_TRUE(result) << to_string(reply);
    EXPECT_FALSE(result.error());
    EXPECT_EQ(*result, reply);
  }
}

struct ErrorCase {
  const char* message;
  errc code;
};

TEST(Command, ParseOfAnErrorReplyIsAFailedResultWithTheServersText) {
  const Command command{"INCR", "k"};
  const ErrorCase cases[] = {
      {"WRONGTYPE Operation against a key holding the wrong kind of value", errc::wrong_type},
      {"OOM command not allowed when used memory > 'maxmemory'.", errc::out_of_memory},
      {"NOPERM this user has no permissions to run the 'incr' command", errc::no_permission},
      {"NOSCRIPT No matching script. Please use EVAL.", errc::no_script},
      {"BUSY Redis is busy running a script.", errc::server_busy},
      {"LOADING Redis is loading the dataset in memory", errc::server_loading},
      {"READONLY You can't write against a read only replica.", errc::read_only_replica},
      {"NOAUTH Authentication required.", errc::auth_failed},
      {"ERR value is not an integer or out of range", errc::server_error},
      {"", errc::server_error},
  };
  for (const ErrorCase& c : cases) {
    Result<Reply> result = command.parse(Reply::make_error(c.message), Timing{});
    EXPECT_FALSE(result) << c.message;
    EXPECT_FALSE(result.has_value());
    EXPECT_EQ(result.error(), c.code) << c.message;
    EXPECT_EQ(result.detail(), c.message);
  }
}

TEST(Command, ValueOfAFailedResultThrowsTheCodeWithTheServersText) {
  Result<Reply> result = Command{"INCR", "k"}.parse(
      Reply::make_error("WRONGTYPE Operation against a key holding the wrong kind of value"),
      Timing{});
  try {
    (void)result.value();
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::wrong_type);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE Operation against a key"), std::string::npos)
        << e.what();
  }
}

// --- Cluster routing: the slot of a request's keys
// ------------------------------------------------

TEST(RequestKeys, ACommandDeclaresNoKeysUnlessItsBuilderDoes) {
  EXPECT_EQ(Request::command({"GET", "k"}).keys(), Request::Keys::unknown);
  EXPECT_EQ(Request::command({"PING"}).without_keys().keys(), Request::Keys::none);
  const Request keyed = Request::command({"SET", "foo", "v"}).for_key("foo");
  EXPECT_EQ(keyed.keys(), Request::Keys::one_slot);
  EXPECT_EQ(keyed.slot(), 12182);  // CLUSTER KEYSLOT foo
  // without_keys() after a key changes nothing.
  EXPECT_EQ(Request::command({"GET", "foo"}).for_key("foo").without_keys().keys(),
            Request::Keys::one_slot);
}

TEST(RequestKeys, KeysInDifferentSlotsAreCrossSlotAndAHashTagJoinsThem) {
  EXPECT_EQ(Request::command({"MSET", "foo", "1", "bar", "2"}).for_key("foo").for_key("bar").keys(),
            Request::Keys::cross_slot);
  const Request tagged =
      Request::command({"MSET", "{u1}.a", "1", "{u1}.b", "2"}).for_key("{u1}.a").for_key("{u1}.b");
  EXPECT_EQ(tagged.keys(), Request::Keys::one_slot);
  EXPECT_EQ(tagged.slot(), key_slot("u1"));
}

TEST(RequestKeys, AScriptKnowsItsKeysAndItsFallbackKeepsThem) {
  const Script script("return 1");
  const std::string_view one[] = {"foo"};
  const std::string_view two[] = {"foo", "bar"};
  const Request single = Request::script(script, one, {});
  EXPECT_EQ(single.keys(), Request::Keys::one_slot);
  EXPECT_EQ(single.slot(), 12182);
  EXPECT_EQ(single.eval_fallback().keys(), Request::Keys::one_slot);
  EXPECT_EQ(single.eval_fallback().slot(), 12182);
  EXPECT_EQ(Request::script(script, two, {}).keys(), Request::Keys::cross_slot);
  EXPECT_EQ(Request::script(script, {}, {}).keys(), Request::Keys::none);
}

TEST(RequestKeys, ALockAcquireIsRoutedByItsKey) {
  const Lock<std::string> lock{"invoice", std::chrono::seconds(5)};
  const auto query = lock.try_lock("INV-7");
  EXPECT_EQ(query.request().keys(), Request::Keys::one_slot);
  EXPECT_EQ(query.request().slot(), key_slot(lock.key("INV-7")));
}

// Slots are computed when asked for, from the request's own bytes, for keys declared by their
// position; these check that they agree with key_slot() of the keys as declared.

TEST(RequestKeys, LazySlotsAgreeWithKeySlotForEachKeyAndHashTag) {
  const Script script("return 1");
  const std::string binary("k\r\n$3\r\n\0x", 9);
  for (std::string_view key :
       {std::string_view("foo"), std::string_view(""), std::string_view("{u1}.a"),
        std::string_view("a{}b"), std::string_view("{}{x}"), std::string_view("x{y"),
        std::string_view("leasehold:Lock:invoice:INV-7"),
        std::string_view("leasehold:RwLock:{invoice:INV-7}:w"), std::string_view(binary)}) {
    const Request command = Request::command({"GET", key}).for_key(key);
    EXPECT_EQ(command.keys(), Request::Keys::one_slot) << key;
    EXPECT_EQ(command.slot(), key_slot(key)) << key;
    const std::string_view keys[] = {key};
    const Request call = Request::script(script, keys, {});
    EXPECT_EQ(call.keys(), Request::Keys::one_slot) << key;
    EXPECT_EQ(call.slot(), key_slot(key)) << key;
    EXPECT_EQ(call.keys_and_slot(), std::make_pair(Request::Keys::one_slot, key_slot(key)));
  }
}

TEST(RequestKeys, AKeyThatIsNoArgumentGetsItsSlotAsDeclared) {
  // The command does not hold its key among its arguments: its slot is still that key's.
  const Request request = Request::command({"PING"}).for_key("foo");
  EXPECT_EQ(request.keys(), Request::Keys::one_slot);
  EXPECT_EQ(request.slot(), 12182);
  const Request two = Request::command({"PING"}).for_key("{t}a").for_key("{t}b");
  EXPECT_EQ(two.keys(), Request::Keys::one_slot);
  EXPECT_EQ(two.slot(), key_slot("t"));
  EXPECT_EQ(Request::command({"PING"}).for_key("foo").for_key("bar").keys(),
            Request::Keys::cross_slot);
}

TEST(RequestKeys, KeysAmongAndOutsideTheArgumentsCombineInTheirOrder) {
  // foo is an argument, bar is not, baz is an argument after bar: cross-slot either way, and
  // slot() is the first declared key's.
  const Request mixed =
      Request::command({"X", "foo", "baz"}).for_key("foo").for_key("bar").for_key("baz");
  EXPECT_EQ(mixed.keys(), Request::Keys::cross_slot);
  EXPECT_EQ(mixed.slot(), key_slot("foo"));
  const Request reversed = Request::command({"X", "foo"}).for_key("bar").for_key("foo");
  EXPECT_EQ(reversed.keys(), Request::Keys::cross_slot);
  EXPECT_EQ(reversed.slot(), key_slot("bar"));
  // Arguments that are not next to each other (MSET k1 v1 k2 v2) in one slot.
  const Request tagged = Request::command({"MSET", "{u}1", "v", "{u}2", "w", "{u}3", "x"})
                             .for_key("{u}1")
                             .for_key("{u}2")
                             .for_key("{u}3");
  EXPECT_EQ(tagged.keys(), Request::Keys::one_slot);
  EXPECT_EQ(tagged.slot(), key_slot("u"));
  const Request spread =
      Request::command({"MSET", "{u}1", "v", "{w}2", "w"}).for_key("{u}1").for_key("{w}2");
  EXPECT_EQ(spread.keys(), Request::Keys::cross_slot);
  EXPECT_EQ(spread.slot(), key_slot("u"));
  // The same key twice, and a key equal to the command's name.
  EXPECT_EQ(Request::command({"GET", "foo"}).for_key("foo").for_key("foo").keys(),
            Request::Keys::one_slot);
  const Request named = Request::command({"foo", "bar"}).for_key("foo");
  EXPECT_EQ(named.keys(), Request::Keys::one_slot);
  EXPECT_EQ(named.slot(), 12182);
}

TEST(RequestKeys, MultiKeyScriptsAreCrossSlotUnlessTheirKeysShareASlot) {
  const Script script("return 1");
  const std::string_view spread[] = {"{a}1", "{a}2", "{b}3"};
  const std::string_view args[] = {"{b}", "x"};
  EXPECT_EQ(Request::script(script, spread, args).keys(), Request::Keys::cross_slot);
  EXPECT_EQ(Request::script(script, spread, args).slot(), key_slot("a"));
  // Arguments are not keys: only the keys decide.
  const std::string_view together[] = {"{a}1", "{a}2", "{a}3"};
  const Request call = Request::script(script, together, args);
  EXPECT_EQ(call.keys(), Request::Keys::one_slot);
  EXPECT_EQ(call.slot(), key_slot("a"));
  // An RwLock's keys share their slot; the EVAL fallback and copies keep the keys.
  const std::string_view rw[] = {"leasehold:RwLock:{ns:n}:w", "leasehold:RwLock:{ns:n}:r"};
  const Request rw_call = Request::script(script, rw, args);
  EXPECT_EQ(rw_call.keys(), Request::Keys::one_slot);
  EXPECT_EQ(rw_call.slot(), key_slot("ns:n"));
  EXPECT_EQ(rw_call.eval_fallback().keys_and_slot(), rw_call.keys_and_slot());
  const Request copy = rw_call;
  EXPECT_EQ(copy.keys_and_slot(), rw_call.keys_and_slot());
  const Request spread_call = Request::script(script, spread, args);
  EXPECT_EQ(spread_call.eval_fallback().keys(), Request::Keys::cross_slot);
}

TEST(RequestKeys, ManyKeysAndFarArguments) {
  const Script script("return 1");
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i)
    names.push_back("{t}k" + std::to_string(i));
  const std::vector<std::string_view> keys(names.begin(), names.end());
  const Request call = Request::script(script, keys, {});
  EXPECT_EQ(call.keys(), Request::Keys::one_slot);
  EXPECT_EQ(call.slot(), key_slot("t"));
  names.push_back("other");
  const std::vector<std::string_view> more(names.begin(), names.end());
  EXPECT_EQ(Request::script(script, more, {}).keys(), Request::Keys::cross_slot);
  // A key past the 255th argument: its slot is computed as it is declared.
  std::vector<std::string> argv(300, "v");
  argv[0] = "MSET";
  argv[299] = "foo";
  const Request far = Request::command(std::span<const std::string>(argv)).for_key("foo");
  EXPECT_EQ(far.keys(), Request::Keys::one_slot);
  EXPECT_EQ(far.slot(), 12182);
}

TEST(RequestKeys, CommandsWithoutKeys) {
  const Script script("return 1");
  EXPECT_EQ(Request::command({"PING"}).keys(), Request::Keys::unknown);
  EXPECT_EQ(Request::command({"PING"}).without_keys().keys_and_slot(),
            std::make_pair(Request::Keys::none, std::uint16_t{0}));
  EXPECT_EQ(Request::script(script, {}, {}).keys_and_slot(),
            std::make_pair(Request::Keys::none, std::uint16_t{0}));
  const std::string_view args[] = {"foo"};
  EXPECT_EQ(Request::script(script, {}, args).keys(), Request::Keys::none);
  EXPECT_EQ(Request().keys(), Request::Keys::unknown);
  // without_keys() after a key declared by its position changes nothing.
  const Request keyed = Request::command({"GET", "foo"}).for_key("foo").without_keys();
  EXPECT_EQ(keyed.keys_and_slot(), std::make_pair(Request::Keys::one_slot, std::uint16_t{12182}));
}

TEST(RequestKeys, AddKeySumsUpKeysLearntElsewhere) {
  Request::Keys keys = Request::Keys::unknown;
  std::uint16_t slot = 0;
  Request::add_key(keys, slot, "{x}1");
  EXPECT_EQ(keys, Request::Keys::one_slot);
  EXPECT_EQ(slot, key_slot("x"));
  Request::add_key(keys, slot, "{x}2");
  EXPECT_EQ(keys, Request::Keys::one_slot);
  Request::add_key(keys, slot, "foo");
  EXPECT_EQ(keys, Request::Keys::cross_slot);
  EXPECT_EQ(slot, key_slot("x"));
}

TEST(RequestKeys, EveryAcquireAndLeaseCallIsRoutedByItsKeys) {
  const Lock<std::string> fenced =
      Lock<std::string>{"invoice", std::chrono::seconds(5)}.with_fencing();
  const auto query = fenced.try_lock("INV-{7}");
  // A cluster counts the fence on the slot's counter; a single server on its one counter.
  const Request request = query.request();
  const Request& on_cluster = request.cluster_form();
  ASSERT_TRUE(request.has_cluster_form());
  EXPECT_EQ(on_cluster.keys(), Request::Keys::one_slot);
  EXPECT_EQ(on_cluster.slot(), key_slot(fenced.key("INV-{7}")));
  EXPECT_EQ(on_cluster.slot(), key_slot(fenced.fence_counter_key("INV-{7}")));
  EXPECT_NE(request.bytes().find("\r\n" + fenced.server_fence_counter_key() + "\r\n"),
            std::string_view::npos);
  const auto cleanup = query.on_unknown_outcome();
  ASSERT_TRUE(cleanup);
  EXPECT_EQ(cleanup->keys_and_slot(),
            std::make_pair(Request::Keys::one_slot, key_slot(fenced.key("INV-{7}"))));
}

TEST(Request, AClusterFormIsWhatAClusterSendsAndCopiesKeepIt) {
  const Script script(kReturnOne);
  const std::vector<std::string_view> server_keys = {"{a}x", "counter"};
  const std::vector<std::string_view> cluster_keys = {"{a}x", "{a}counter"};
  const Request plain = Request::script(script, server_keys, {});
  EXPECT_FALSE(plain.has_cluster_form());
  EXPECT_EQ(&plain.cluster_form(), &plain) << "without a form, a cluster sends the request";

  const Request both = Request::script(script, server_keys, {})
                           .on_cluster_as(Request::script(script, cluster_keys, {}))
                           .grants_lease();
  ASSERT_TRUE(both.has_cluster_form());
  EXPECT_EQ(both.bytes(), plain.bytes()) << "a single server sends the request itself";
  EXPECT_EQ(both.cluster_form().bytes(), Request::script(script, cluster_keys, {}).bytes());
  EXPECT_EQ(both.cluster_form().keys(), Request::Keys::one_slot);
  EXPECT_EQ(both.keys(), Request::Keys::cross_slot);
  const Request copy = both;
  ASSERT_TRUE(copy.has_cluster_form());
  EXPECT_EQ(copy.cluster_form().bytes(), both.cluster_form().bytes());
  EXPECT_TRUE(copy.is_lease_grant());
}

}  // namespace
TEST(Request, PartsAreSentInItsPlaceOnlyWhenItsKeysSpanSlots) {
  const Script script(kReturnOne);
  const std::vector<std::string_view> spread = {"{a}x", "{b}y"};
  const std::vector<std::string_view> together = {"{a}x", "{a}y"};
  const auto parts = [&] {
    std::vector<Request> made;
    for (const std::string_view key : spread)
      made.push_back(Request::script(script, std::span(&key, 1), {}));
    return made;
  };
  const Request plain = Request::script(script, spread, {});
  EXPECT_TRUE(plain.parts().empty());
  EXPECT_FALSE(plain.sent_in_parts_on_cluster()) << "no parts: refused as cross-slot";

  const Request split = Request::script(script, spread, {}).split_by_slot(parts());
  ASSERT_EQ(split.parts().size(), 2u);
  EXPECT_TRUE(split.sent_in_parts_on_cluster());
  EXPECT_EQ(
      split.parts()[1].bytes(),
      Request::script(script, std::span<const std::string_view>(spread).subspan(1), {}).bytes());
  const Request copy = split;  // a copy keeps them
  EXPECT_EQ(copy.parts().size(), 2u);
  EXPECT_EQ(copy.bytes(), split.bytes());

  // Keys of one slot: the request itself goes, parts or not.
  EXPECT_FALSE(
      Request::script(script, together, {}).split_by_slot(parts()).sent_in_parts_on_cluster());
}

}  // namespace leasehold
