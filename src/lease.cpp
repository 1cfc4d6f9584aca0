#include "leasehold/lease.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

#include "hex.hpp"

namespace leasehold {
namespace {

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

LeaseId LeaseId::generate() {
  LeaseId id;
  std::size_t filled = 0;
  while (filled < id.bytes_.size()) {
    const ssize_t n = ::getrandom(id.bytes_.data() + filled, id.bytes_.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw std::system_error(errno, std::generic_category(), "getrandom(2) failed");
    }
    filled += static_cast<std::size_t>(n);
  }
  return id;
}

LeaseId LeaseId::from_hex(std::string_view hex) {
  LeaseId id;
  if (hex.size() != 2 * id.bytes_.size())
    throw Error(make_error_code(errc::invalid_argument), "a lease token is 32 hex digits");
  for (std::size_t i = 0; i < id.bytes_.size(); ++i) {
    const int hi = detail::hex_value(hex[2 * i]);
    const int lo = detail::hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      throw Error(make_error_code(errc::invalid_argument), "a lease token is 32 hex digits");
    id.bytes_[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return id;
}

std::string LeaseId::hex() const {
  std::string out;
  out.reserve(2 * bytes_.size());
  for (std::uint8_t byte : bytes_) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

std::string LeaseId::short_hex() const {
  return hex().substr(0, 8) + "\xe2\x80\xa6";
}

}  // namespace leasehold
