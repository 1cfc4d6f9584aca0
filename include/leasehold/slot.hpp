// Redis Cluster hash slots: CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384.
#pragma once

#include <cstdint>
#include <string_view>

namespace leasehold {

inline constexpr std::uint16_t kClusterSlots = 16384;

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis Cluster uses it.
constexpr std::uint16_t crc16(std::string_view data) noexcept {
  std::uint16_t crc = 0;
  for (char c : data) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(c) << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
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

}  // namespace leasehold
