// Text that fits a terminal's columns (text.hpp).
#include "top/text.hpp"

#include <algorithm>

namespace leasehold::cli::top_parts {
namespace {

bool is_continuation(char byte) {
  return (static_cast<unsigned char>(byte) & 0xc0) == 0x80;
}

// Where the character after the one at `at` starts. Displayable text is well-formed UTF-8: a
// character is a byte and the continuation bytes after it.
std::size_t next_character(std::string_view shown, std::size_t at) {
  ++at;
  while (at < shown.size() && is_continuation(shown[at]))
    ++at;
  return at;
}

}  // namespace

std::size_t columns_of(std::string_view shown) {
  return static_cast<std::size_t>(
      std::count_if(shown.begin(), shown.end(), [](char c) { return !is_continuation(c); }));
}

std::string fit(const std::string& shown, std::size_t width, std::string_view ellipsis) {
  if (columns_of(shown) <= width)
    return shown;
  if (width == 0)
    return "";
  std::size_t at = 0;
  for (std::size_t kept = 0; kept < width - 1; ++kept)
    at = next_character(shown, at);
  return shown.substr(0, at) + std::string(ellipsis);
}

}  // namespace leasehold::cli::top_parts
