// The CRC16 table behind crc16() (slot.hpp).
#pragma once

#include <array>
#include <cstdint>

namespace leasehold::detail {

// The CRC16 of each byte value, so that a key costs one lookup per byte (a cluster computes the
// slot of every request's keys).
constexpr std::array<std::uint16_t, 256> make_crc16_table() noexcept {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    auto crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    table[byte] = crc;
  }
  return table;
}
inline constexpr std::array<std::uint16_t, 256> kCrc16Table = make_crc16_table();

}  // namespace leasehold::detail
