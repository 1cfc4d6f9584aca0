// Command-line helpers shared by the benchmark programs.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace leasehold::bench {

// `text` as a non-negative integer; otherwise calls usage(why), which must not return.
template <class Usage>
std::uint64_t parse_number(std::string_view name, std::string_view text, Usage usage) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    usage((std::string(name) + " wants a non-negative integer, not '" + std::string(text) + "'")
              .c_str());
  return value;
}

}  // namespace leasehold::bench
