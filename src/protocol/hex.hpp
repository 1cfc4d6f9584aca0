// Hex digits, for URLs' %-escapes and lease ids.
#pragma once

namespace leasehold::detail {

// The value of one hex digit (either case), or -1.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

}  // namespace leasehold::detail
