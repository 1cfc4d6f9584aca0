#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "codec.hpp"
#include "leasehold/error.hpp"
#include "leasehold/reply.hpp"

namespace leasehold {
namespace {

using codec::ReplyReader;

std::string format(std::initializer_list<std::string_view> args) {
  return codec::format_command(std::span<const std::string_view>(args.begin(), args.size()));
}

// --- Commands out --------------------------------------------------------------------------------

TEST(FormatCommand, SimpleCommands) {
  EXPECT_EQ(format({"PING"}), "*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(format({"SET", "key", "value"}), "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
  EXPECT_EQ(format({"CLIENT", "SETNAME", "leasehold"}),
            "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nleasehold\r\n");
}

TEST(FormatCommand, BinaryArgumentsWithNulCrLfAreLengthPrefixed) {
  const std::string binary("a\0b\r\nc", 6);
  const std::string high("\xff\x80\x00", 3);
  EXPECT_EQ(format({"SET", binary, high}),
            "*3\r\n$3\r\nSET\r\n$6\r\n" + binary + "\r\n$3\r\n" + high + "\r\n");
  EXPECT_EQ(binary.size(), 6u);
  EXPECT_EQ(high.size(), 3u);
}

TEST(FormatCommand, EmptyArguments) {
  EXPECT_EQ(format({"SET", "", ""}), "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n");
  const std::string empty;
  EXPECT_EQ(format({"ECHO", empty}), "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n");
}

TEST(FormatCommand, ArgumentsWithSpacesAndPercentSignsAreNotInterpreted) {
  // Not a format string: '%' and spaces go out verbatim.
  EXPECT_EQ(format({"SET", "%s %d", "a b"}), "*3\r\n$3\r\nSET\r\n$5\r\n%s %d\r\n$3\r\na b\r\n");
}

TEST(FormatCommand, ManyArguments) {
  // More arguments than the formatter keeps on its stack.
  std::vector<std::string> args = {"RPUSH", "list"};
  std::string expected = "*40\r\n$5\r\nRPUSH\r\n$4\r\nlist\r\n";
  for (int i = 0; i < 38; ++i) {
    args.push_back(std::to_string(i));
    expected += "$" + std::to_string(args.back().size()) + "\r\n" + args.back() + "\r\n";
  }
  EXPECT_EQ(codec::format_command(std::span<const std::string>(args)), expected);
  const std::vector<std::string_view> views(args.begin(), args.end());
  EXPECT_EQ(codec::format_command(std::span<const std::string_view>(views)), expected);
}

TEST(FormatCommand, LargeArgument) {
  const std::string big(1 << 20, 'x');
  const std::string bytes = format({"SET", "k", big});
  const std::string head = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n";
  ASSERT_EQ(bytes.size(), head.size() + big.size() + 2);
  EXPECT_EQ(bytes.substr(0, head.size()), head);
  EXPECT_EQ(bytes.substr(head.size(), big.size()), big);
  EXPECT_EQ(bytes.substr(bytes.size() - 2), "\r\n");
}

// --- Replies in ----------------------------------------------------------------------------------

// Takes every reply available now; fails the test on a protocol error.
std::vector<Reply> drain(ReplyReader& reader) {
  std::vector<Reply> replies;
  for (;;) {
    std::error_code ec;
    Reply* reply = reader.next(ec);
    EXPECT_FALSE(ec) << reader.error_text();
    if (ec || !reply)
      return replies;
    replies.push_back(std::move(*reply));
  }
}

struct Case {
  const char* name;
  std::string bytes;
  Reply expected;
};
// Short names in test listings (gtest would print the parameter's bytes).
void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

std::vector<Case> cases() {
  const std::string binary("\0\r\n\xff$*-:+", 9);
  return {
      {"status", "+OK\r\n", Reply::make_status("OK")},
      {"status_with_spaces", "+hello world\r\n", Reply::make_status("hello world")},
      {"empty_status", "+\r\n", Reply::make_status("")},
      {"error", "-ERR unknown command 'FOO'\r\n", Reply::make_error("ERR unknown command 'FOO'")},
      {"error_noscript", "-NOSCRIPT No matching script. Please use EVAL.\r\n",
       Reply::make_error("NOSCRIPT No matching script. Please use EVAL.")},
      {"integer", ":42\r\n", Reply::make_integer(42)},
      {"zero", ":0\r\n", Reply::make_integer(0)},
      {"negative_integer", ":-7\r\n", Reply::make_integer(-7)},
      {"max_integer", ":9223372036854775807\r\n", Reply::make_integer(9223372036854775807LL)},
      {"min_integer", ":-9223372036854775808\r\n", Reply::make_integer(-9223372036854775807LL - 1)},
      {"bulk", "$5\r\nhello\r\n", Reply::make_string("hello")},
      {"empty_bulk", "$0\r\n\r\n", Reply::make_string("")},
      {"binary_bulk", "$9\r\n" + binary + "\r\n", Reply::make_string(binary)},
      {"nil_bulk", "$-1\r\n", Reply::make_nil()},
      {"nil_array", "*-1\r\n", Reply::make_nil()},
      {"empty_array", "*0\r\n", Reply::make_array({})},
      {"flat_array", "*3\r\n$1\r\na\r\n:2\r\n+three\r\n",
       Reply::make_array(
           {Reply::make_string("a"), Reply::make_integer(2), Reply::make_status("three")})},
      {"array_with_nils_and_error", "*4\r\n$-1\r\n*-1\r\n-WRONGTYPE x\r\n$0\r\n\r\n",
       Reply::make_array({Reply::make_nil(), Reply::make_nil(), Reply::make_error("WRONGTYPE x"),
                          Reply::make_string("")})},
      {"nested_arrays", "*3\r\n*2\r\n:1\r\n*1\r\n$2\r\nxy\r\n*0\r\n*2\r\n+ok\r\n$-1\r\n",
       Reply::make_array({Reply::make_array({Reply::make_integer(1),
                                             Reply::make_array({Reply::make_string("xy")})}),
                          Reply::make_array({}),
                          Reply::make_array({Reply::make_status("ok"), Reply::make_nil()})})},
      {"deeply_nested", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:5\r\n",
       Reply::make_array({Reply::make_array({Reply::make_array(
           {Reply::make_array({Reply::make_array({Reply::make_integer(5)})})})})})},
  };
}

class ReplyCase : public ::testing::TestWithParam<Case> {};

TEST_P(ReplyCase, FedWhole) {
  const Case& c = GetParam();
  ReplyReader reader;
  reader.feed(c.bytes.data(), c.bytes.size());
  const std::vector<Reply> replies = drain(reader);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], c.expected) << to_string(replies[0]);
}

TEST_P(ReplyCase, SplitAtEveryByteBoundary) {
  const Case& c = GetParam();
  for (std::size_t split = 1; split < c.bytes.size(); ++split) {
    SCOPED_TRACE("split at " + std::to_string(split));
    ReplyReader reader;
    reader.feed(c.bytes.data(), split);
    EXPECT_TRUE(drain(reader).empty());
    reader.feed(c.bytes.data() + split, c.bytes.size() - split);
    const std::vector<Reply> replies = drain(reader);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0], c.expected) << to_string(replies[0]);
    EXPECT_TRUE(drain(reader).empty());
  }
}

TEST_P(ReplyCase, FedOneByteAtATime) {
  const Case& c = GetParam();
  ReplyReader reader;
  for (std::size_t i = 0; i + 1 < c.bytes.size(); ++i) {
    reader.feed(c.bytes.data() + i, 1);
    ASSERT_TRUE(drain(reader).empty()) << "a reply after byte " << i;
  }
  reader.feed(c.bytes.data() + c.bytes.size() - 1, 1);
  const std::vector<Reply> replies = drain(reader);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], c.expected);
}

TEST_P(ReplyCase, ThreeInOneFeedThenSplitAcrossTwoFeeds) {
  const Case& c = GetParam();
  const std::string three = c.bytes + ":1\r\n" + c.bytes;
  ReplyReader reader;
  reader.feed(three.data(), three.size());
  std::vector<Reply> replies = drain(reader);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0], c.expected);
  EXPECT_EQ(replies[1], Reply::make_integer(1));
  EXPECT_EQ(replies[2], c.expected);

  // A feed that ends inside the second reply: the first comes out, the rest waits.
  const std::size_t cut = c.bytes.size() + 2;
  ReplyReader split;
  split.feed(three.data(), cut);
  replies = drain(split);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], c.expected);
  split.feed(three.data() + cut, three.size() - cut);
  replies = drain(split);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0], Reply::make_integer(1));
  EXPECT_EQ(replies[1], c.expected);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Replies, ReplyCase, ::testing::ValuesIn(cases()), case_name);

TEST(ReplyReader, NothingBeforeAnyFeed) {
  ReplyReader reader;
  std::error_code ec;
  EXPECT_FALSE(reader.next(ec));
  EXPECT_FALSE(ec);
}

TEST(ReplyReader, OneMebibyteBulk) {
  std::string payload(1 << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>((i * 131) ^ (i >> 9));
  const std::string bytes = "$1048576\r\n" + payload + "\r\n";
  const Reply expected = Reply::make_string(payload);

  {
    ReplyReader reader;
    reader.feed(bytes.data(), bytes.size());
    const std::vector<Reply> replies = drain(reader);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_TRUE(replies[0] == expected);
  }
  // Splits in the header, across the payload's start and end, and in the trailing CRLF.
  std::vector<std::size_t> splits;
  for (std::size_t i = 1; i <= 16; ++i) {
    splits.push_back(i);
    splits.push_back(bytes.size() - i);
  }
  for (std::size_t i = 1; i < 8; ++i)
    splits.push_back(i * bytes.size() / 8);
  for (std::size_t split : splits) {
    SCOPED_TRACE("split at " + std::to_string(split));
    ReplyReader reader;
    reader.feed(bytes.data(), split);
    EXPECT_TRUE(drain(reader).empty());
    reader.feed(bytes.data() + split, bytes.size() - split);
    const std::vector<Reply> replies = drain(reader);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_TRUE(replies[0] == expected);
  }
  // In 64 KiB reads, as the transport does, followed by a second reply in the last read.
  {
    const std::string two = bytes + "+OK\r\n";
    ReplyReader reader;
    std::vector<Reply> replies;
    for (std::size_t at = 0; at < two.size(); at += 64 * 1024) {
      const std::size_t n = std::min<std::size_t>(64 * 1024, two.size() - at);
      reader.feed(two.data() + at, n);
      for (Reply& reply : drain(reader))
        replies.push_back(std::move(reply));
    }
    ASSERT_EQ(replies.size(), 2u);
    EXPECT_TRUE(replies[0] == expected);
    EXPECT_EQ(replies[1], Reply::make_status("OK"));
  }
}

TEST(ReplyReader, OneMebibyteBulkFedOneByteAtATime) {
  const std::string payload(1 << 20, 'z');
  const std::string bytes = "*2\r\n$1048576\r\n" + payload + "\r\n:9\r\n";
  ReplyReader reader;
  std::error_code ec;
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    reader.feed(bytes.data() + i, 1);
    if (reader.next(ec) || ec)
      FAIL() << "a reply (or an error) after byte " << i << " of " << bytes.size();
  }
  reader.feed(bytes.data() + bytes.size() - 1, 1);
  Reply* reply = reader.next(ec);
  ASSERT_FALSE(ec);
  ASSERT_TRUE(reply);
  EXPECT_TRUE(*reply == Reply::make_array({Reply::make_string(payload), Reply::make_integer(9)}));
}

TEST(ReplyReader, ManySmallRepliesInOneFeed) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i)
    bytes += ":" + std::to_string(i) + "\r\n";
  ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  const std::vector<Reply> replies = drain(reader);
  ASSERT_EQ(replies.size(), 1000u);
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(replies[static_cast<std::size_t>(i)], Reply::make_integer(i));
}

TEST(ReplyReader, DestroyedWithAPartialReplyInside) {
  // Checked by LeakSanitizer: the partly built reply tree is freed with the reader.
  ReplyReader reader;
  const std::string partial = "*3\r\n*2\r\n$3\r\nabc\r\n:1\r\n$10\r\nabc";
  reader.feed(partial.data(), partial.size());
  EXPECT_TRUE(drain(reader).empty());
}

TEST(ReplyReader, AnArrayCountIsNotAnAllocation) {
  // A peer's count of elements (fuzz/corpus/reply_reader/huge_array_count): the reader waits for
  // the elements without making room for two billion of them first.
  ReplyReader reader;
  const std::string bytes = "*2147483647\r\n*2147483647\r\n:1\r\n";
  reader.feed(bytes.data(), bytes.size());
  EXPECT_TRUE(drain(reader).empty());
  EXPECT_FALSE(reader.idle());
}

TEST(ReplyReader, ArraysLargerThanTheRoomMadeUpFrontGrowAsTheirElementsArrive) {
  // 3000 elements, each an array (moved when their parent grows), read in pieces of 7 bytes.
  std::string bytes = "*3000\r\n";
  std::vector<Reply> elements;
  for (int i = 0; i < 3000; ++i) {
    bytes += "*2\r\n:" + std::to_string(i) + "\r\n$1\r\nx\r\n";
    elements.push_back(Reply::make_array({Reply::make_integer(i), Reply::make_string("x")}));
  }
  ReplyReader reader;
  std::vector<Reply> replies;
  for (std::size_t at = 0; at < bytes.size(); at += 7) {
    reader.feed(bytes.data() + at, std::min<std::size_t>(7, bytes.size() - at));
    for (Reply& reply : drain(reader))
      replies.push_back(std::move(reply));
  }
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(replies[0] == Reply::make_array(std::move(elements)));
  EXPECT_TRUE(reader.idle());
}

// --- Protocol errors ----------------------------------------------------------------------------

class ProtocolError : public ::testing::TestWithParam<std::string> {};

TEST_P(ProtocolError, SetsProtocolError) {
  const std::string& bytes = GetParam();
  ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  std::error_code ec;
  Reply* reply = nullptr;
  // A valid reply may precede the malformed one; the error must come, and no reply after it.
  for (int i = 0; i < 4 && !ec; ++i)
    reply = reader.next(ec);
  EXPECT_EQ(ec, errc::protocol_error);
  EXPECT_FALSE(reply);
  EXPECT_FALSE(reader.error_text().empty());
}

INSTANTIATE_TEST_SUITE_P(Malformed, ProtocolError,
                         ::testing::Values("?garbage\r\n", "garbage\r\n", "$abc\r\n", "$-2\r\n",
                                           "$1x\r\n", "*-2\r\n", "*x\r\n", ":abc\r\n", ":12a\r\n",
                                           "*2\r\n:1\r\n?\r\n", "+OK\r\n!oops\r\n",
                                           "$99999999999999999999\r\n", "*3000000000\r\n"));

TEST(ReplyReader, ProtocolErrorAfterAGoodReplyKeepsTheGoodOne) {
  ReplyReader reader;
  const std::string bytes = "+first\r\n?garbage\r\n";
  reader.feed(bytes.data(), bytes.size());
  std::error_code ec;
  Reply* first = reader.next(ec);
  ASSERT_FALSE(ec);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, Reply::make_status("first"));
  EXPECT_FALSE(reader.next(ec));
  EXPECT_EQ(ec, errc::protocol_error);
}

TEST(ReplyReader, ProtocolErrorInsideANestedArrayFreesThePartialTree) {
  // Checked by LeakSanitizer as well.
  ReplyReader reader;
  const std::string bytes = "*2\r\n*2\r\n$3\r\nabc\r\n:1\r\n*1\r\n^\r\n";
  reader.feed(bytes.data(), bytes.size());
  std::error_code ec;
  EXPECT_FALSE(reader.next(ec));
  EXPECT_EQ(ec, errc::protocol_error);
}

}  // namespace
}  // namespace leasehold
