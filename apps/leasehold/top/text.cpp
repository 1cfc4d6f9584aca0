// Text that fits a terminal's columns (text.hpp).
#include "top/text.hpp"

#include <algorithm>

namespace leasehold::cli::top_parts {
namespace {

// The byte length of the UTF-8 character that `text` starts with; 0 when it is not one.
std::size_t utf8_length(std::string_view text) {
  const auto lead = static_cast<unsigned char>(text[0]);
  const std::size_t length = lead < 0x80           ? 1
                             : (lead >> 5) == 0x06 ? 2
                             : (lead >> 4) == 0x0e ? 3
                             : (lead >> 3) == 0x1e ? 4
                                                   : 0;
  if (length == 0 || length > text.size())
    return 0;
  for (std::size_t i = 1; i < length; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80)
      return 0;
  return length;
}

}  // namespace

std::string displayable(std::string_view text, bool utf8) {
  std::string shown;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_length(text.substr(at));
    const auto lead = static_cast<unsigned char>(text[at]);
    const bool control =
        (length == 1 && (lead < 0x20 || lead == 0x7f)) ||
        (length == 2 && lead == 0xc2 && static_cast<unsigned char>(text[at + 1]) < 0xa0);
    if (length == 0 || control || (length > 1 && !utf8))
      shown += '?';
    else
      shown.append(text.substr(at, length));
    at += std::max<std::size_t>(length, 1);
  }
  return shown;
}

std::size_t columns_of(std::string_view shown) {
  return static_cast<std::size_t>(std::count_if(shown.begin(), shown.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

std::string fit(const std::string& shown, std::size_t width, std::string_view ellipsis) {
  if (columns_of(shown) <= width)
    return shown;
  if (width == 0)
    return "";
  std::size_t at = 0;
  for (std::size_t kept = 0; kept < width - 1; ++kept)
    at += std::max<std::size_t>(utf8_length(std::string_view(shown).substr(at)), 1);
  return shown.substr(0, at) + std::string(ellipsis);
}

}  // namespace leasehold::cli::top_parts
