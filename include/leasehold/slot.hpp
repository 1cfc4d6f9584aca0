// Redis Cluster hash slots: CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "leasehold/detail/crc16.hpp"

namespace leasehold {

inline constexpr std::uint16_t kClusterSlots = 16384;

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis Cluster uses it.
constexpr std::uint16_t crc16(std::string_view data) noexcept {
  std::uint16_t crc = 0;
  for (char c : data) {
    const auto index = static_cast<std::uint8_t>((crc >> 8) ^ static_cast<unsigned char>(c));
    crc = static_cast<std::uint16_t>((crc << 8) ^ detail::kCrc16Table[index]);
  }
  return crc;
}

// The part of a key that decides its slot: the bytes between the first '{' and the first '}'
// after it, if that is not empty; otherwise the whole key.
constexpr std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos)
    return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1)
    return key;
  return key.substr(open + 1, close - open - 1);
}

constexpr std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) % kClusterSlots);
}

// A key named after `key` + `suffix`, in the slot of `key`, so that one script may use both on a
// cluster; it starts with `key` (as ACL key patterns see it). `key` + `suffix` when `key` has a
// hash tag; `key` + `suffix` + "{key}" when it has no brace; else `key` with its braces and '%'
// escaped, `suffix`, and a short tag of the same slot.
std::string same_slot_key(std::string_view key, std::string_view suffix);

// A hash tag, braces included, that puts any key holding it (as its first braces) in the slot of
// `key`: "{tag}" of a tagged key; "{key}" of a key without braces; else a short tag of its slot.
std::string same_slot_tag(std::string_view key);

// `base` + "{" + the short tag of `key`'s slot + "}": one key per slot whatever key of the slot
// asks, for state shared by every key of a slot (the fence counters, docs/keys.md). `base`
// must hold no brace.
std::string per_slot_key(std::string_view base, std::string_view key);

}  // namespace leasehold
