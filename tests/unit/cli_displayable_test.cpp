// How the leasehold command shows outside text (names, holders, keys, the server's words): no
// control character or malformed UTF-8 reaches the terminal, and everything else stays as it is.
#include <gtest/gtest.h>

#include <string>

#include "displayable.hpp"
#include "top/text.hpp"

namespace leasehold::cli {
namespace {

TEST(CliDisplayable, KeepsPrintableTextAndWellFormedUtf8AsItIs) {
  for (const std::string text :
       {"", "deploy", "web-3 \"sh -c x\" 100% {a}", "caf\xc3\xa9", "\xe2\x80\xa6", "\xc2\xa0",
        "\xed\x9f\xbf", "\xee\x80\x80", "\xf0\x9f\x94\x92", "\xf4\x8f\xbf\xbf"})
    EXPECT_EQ(displayable(text), text) << text;
}

TEST(CliDisplayable, ShowsEachControlCharacterAsAQuestionMark) {
  EXPECT_EQ(displayable("a\x1b[2Jb"), "a?[2Jb");                          // ESC: a CSI sequence
  EXPECT_EQ(displayable("\x1b]0;title\x07"), "?]0;title?");               // OSC, ended by BEL
  EXPECT_EQ(displayable("ok\rfake\bX\n\t"), "ok?fake?X??");               // CR, backspace, LF, tab
  EXPECT_EQ(displayable(std::string("a\0b", 3)), "a?b");                  // NUL
  EXPECT_EQ(displayable("\x7f"), "?");                                    // DEL
  EXPECT_EQ(displayable("\xc2\x80 \xc2\x9b[31m \xc2\x9f"), "? ?[31m ?");  // C1, in UTF-8
}

TEST(CliDisplayable, ShowsEachByteOfMalformedUtf8AsAQuestionMark) {
  EXPECT_EQ(displayable("\x9b[2J"), "?[2J");   // a bare C1 byte: CSI to some terminals
  EXPECT_EQ(displayable("a\xff\xfe"), "a??");  // never UTF-8
  EXPECT_EQ(displayable("\xc3"), "?");         // cut short at the end
  EXPECT_EQ(displayable("\xe2\x80x"), "??x");  // cut short before ASCII
  EXPECT_EQ(displayable("\xc0\x9b"), "??");    // overlong forms: of ESC, DEL, U+009B, ESC
  EXPECT_EQ(displayable("\xc1\xbf"), "??");
  EXPECT_EQ(displayable("\xe0\x82\x9b"), "???");
  EXPECT_EQ(displayable("\xf0\x80\x80\x9b"), "????");
  EXPECT_EQ(displayable("\xed\xa0\x80"), "???");       // a surrogate
  EXPECT_EQ(displayable("\xf4\x90\x80\x80"), "????");  // past U+10FFFF
  EXPECT_EQ(displayable("\xf5\x80\x80\x80"), "????");
}

TEST(CliDisplayable, ShowsNonAsciiAsQuestionMarksOnATerminalThatIsNotUtf8) {
  EXPECT_EQ(displayable("caf\xc3\xa9 \xe2\x80\xa6", false), "caf? ?");
  EXPECT_EQ(displayable("a\x1bz", false), "a?z");
}

// Whether `shown` holds a C0 control or DEL, or a C1 control encoded in UTF-8.
bool holds_a_control(const std::string& shown) {
  for (std::size_t at = 0; at < shown.size(); ++at) {
    const auto byte = static_cast<unsigned char>(shown[at]);
    const auto next = at + 1 < shown.size() ? static_cast<unsigned char>(shown[at + 1]) : 0;
    if (byte < 0x20 || byte == 0x7f || (byte == 0xc2 && next >= 0x80 && next < 0xa0))
      return true;
  }
  return false;
}

// Every pair of byte values, in a text where they may start a character of any length: what
// comes out holds no control character, and stays as it is when shown again (it is well-formed).
TEST(CliDisplayable, NoInputLetsAControlCharacterThrough) {
  for (int first = 0; first < 256; ++first) {
    for (int second = 0; second < 256; ++second) {
      const std::string text{'x', static_cast<char>(first), static_cast<char>(second), '\x80',
                             '\x80'};
      const std::string shown = displayable(text);
      ASSERT_FALSE(holds_a_control(shown)) << first << " " << second;
      ASSERT_EQ(displayable(shown), shown) << first << " " << second;
    }
  }
  EXPECT_TRUE(holds_a_control("a\xc2\x9b")) << "the check itself finds one";
}

TEST(CliDisplayable, TopCutsDisplayableTextByCharacters) {
  const std::string shown = displayable("caf\xc3\xa9-\x1b-\xe2\x80\xa6-long");
  EXPECT_EQ(shown, "caf\xc3\xa9-?-\xe2\x80\xa6-long");
  EXPECT_EQ(top_parts::fit(shown, 8, "~"), "caf\xc3\xa9-?-~");
  EXPECT_EQ(top_parts::fit(shown, 100, "~"), shown);
  EXPECT_EQ(top_parts::fit(shown, 1, "~"), "~");
}

}  // namespace
}  // namespace leasehold::cli
