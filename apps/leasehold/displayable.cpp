// Outside text as the command shows it (displayable.hpp).
#include "displayable.hpp"

#include <algorithm>
#include <cstddef>

namespace leasehold::cli {
namespace {

// The lead bytes of well-formed UTF-8 (Unicode's table 3-7): how long the character is, and the
// range of its second byte, which excludes overlong forms, surrogates and what lies past U+10FFFF.
struct Lead {
  unsigned char first, last;
  std::size_t length;
  unsigned char second_low, second_high;
};
constexpr Lead kLeads[] = {
    {0xc2, 0xdf, 2, 0x80, 0xbf}, {0xe0, 0xe0, 3, 0xa0, 0xbf}, {0xe1, 0xec, 3, 0x80, 0xbf},
    {0xed, 0xed, 3, 0x80, 0x9f}, {0xee, 0xef, 3, 0x80, 0xbf}, {0xf0, 0xf0, 4, 0x90, 0xbf},
    {0xf1, 0xf3, 4, 0x80, 0xbf}, {0xf4, 0xf4, 4, 0x80, 0x8f},
};

bool is_continuation(unsigned char byte) {
  return (byte & 0xc0) == 0x80;
}

// The byte length of the well-formed UTF-8 character that `text` starts with; 0 when it does not
// start with one.
std::size_t utf8_length(std::string_view text) {
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(text[at]); };
  if (byte(0) < 0x80)
    return 1;
  const auto lead = std::find_if(std::begin(kLeads), std::end(kLeads), [&](const Lead& each) {
    return each.first <= byte(0) && byte(0) <= each.last;
  });
  if (lead == std::end(kLeads) || text.size() < lead->length || byte(1) < lead->second_low ||
      byte(1) > lead->second_high)
    return 0;
  for (std::size_t at = 2; at < lead->length; ++at)
    if (!is_continuation(byte(at)))
      return 0;
  return lead->length;
}

// Whether the character `text` starts with, `length` bytes long, is a control character: C0 and
// DEL, or C1 (U+0080 to U+009F, which a terminal may take for ESC sequences: U+009B is CSI).
bool is_control(std::string_view text, std::size_t length) {
  const auto lead = static_cast<unsigned char>(text[0]);
  if (length == 1)
    return lead < 0x20 || lead == 0x7f;
  return length == 2 && lead == 0xc2 && static_cast<unsigned char>(text[1]) < 0xa0;
}

}  // namespace

std::string displayable(std::string_view text, bool utf8) {
  std::string shown;
  shown.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::string_view rest = text.substr(at);
    const std::size_t length = utf8_length(rest);
    if (length == 0 || is_control(rest, length) || (length > 1 && !utf8))
      shown += '?';
    else
      shown.append(rest.substr(0, length));
    at += std::max<std::size_t>(length, 1);
  }
  return shown;
}

}  // namespace leasehold::cli
