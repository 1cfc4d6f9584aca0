#include "leasehold/lease.hpp"

#include <pthread.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>

#include "hex.hpp"

namespace leasehold {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Random bytes for lease ids, drawn from getrandom(2) 64 ids (1 KiB) at a time: one system call
// per 64 acquires instead of one per acquire. Each byte is handed out once and wiped as it is
// taken, so the buffer never holds an id that was given out. Per thread: no lock on the acquire
// path.
struct RandomIdBytes {
  static constexpr std::size_t kIds = 64;
  std::array<std::uint8_t, kIds * LeaseId::kSize> bytes{};
  std::size_t taken = bytes.size();  // all taken: the next take() refills
};

thread_local RandomIdBytes random_id_bytes;

// A forked child starts with a copy of its parent's buffer: it would hand out the ids its parent
// is about to use. The child's (only) thread forgets its copy.
void forget_random_id_bytes_in_child() {
  RandomIdBytes& buffer = random_id_bytes;
  explicit_bzero(buffer.bytes.data(), buffer.bytes.size());
  buffer.taken = buffer.bytes.size();
}

void fill_from_os(std::uint8_t* out, std::size_t size) {
  std::size_t filled = 0;
  while (filled < size) {
    const ssize_t n = ::getrandom(out + filled, size - filled, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw std::system_error(errno, std::generic_category(), "getrandom(2) failed");
    }
    filled += static_cast<std::size_t>(n);
  }
}

void take_random_id_bytes(std::array<std::uint8_t, LeaseId::kSize>& out) {
  static std::once_flag fork_handler_registered;
  std::call_once(fork_handler_registered, [] {
    if (const int error = ::pthread_atfork(nullptr, nullptr, forget_random_id_bytes_in_child))
      throw std::system_error(error, std::generic_category(), "pthread_atfork failed");
  });
  RandomIdBytes& buffer = random_id_bytes;
  if (buffer.taken == buffer.bytes.size()) {
    fill_from_os(buffer.bytes.data(), buffer.bytes.size());
    buffer.taken = 0;
  }
  std::uint8_t* next = buffer.bytes.data() + buffer.taken;
  std::memcpy(out.data(), next, out.size());
  explicit_bzero(next, out.size());
  buffer.taken += out.size();
}

}  // namespace

LeaseId LeaseId::generate() {
  LeaseId id;
  take_random_id_bytes(id.bytes_);
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

LeaseId::HexDigits LeaseId::hex_digits() const noexcept {
  // Two digits per byte from one table: this runs for every acquire.
  static constexpr std::array<char, 512> kDigitPairs = [] {
    std::array<char, 512> pairs{};
    for (std::size_t byte = 0; byte < 256; ++byte) {
      pairs[2 * byte] = kHex[byte >> 4];
      pairs[2 * byte + 1] = kHex[byte & 0xf];
    }
    return pairs;
  }();
  HexDigits out;
  for (std::size_t i = 0; i < bytes_.size(); ++i)
    std::memcpy(out.data() + 2 * i, kDigitPairs.data() + 2 * bytes_[i], 2);
  return out;
}

std::string LeaseId::hex() const {
  const HexDigits digits = hex_digits();
  return std::string(digits.data(), digits.size());
}

std::string LeaseId::short_hex() const {
  const HexDigits digits = hex_digits();
  return std::string(digits.data(), 8) + "\xe2\x80\xa6";
}

}  // namespace leasehold
