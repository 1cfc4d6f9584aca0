// A lease's stored value on any bytes: what a lock key, a reader's or a permit's member holds
// (read back from Redis by status tools and waiters), and what a token's adopt() and the
// command's --token / LEASEHOLD_TOKEN take from another process.
//
// Checks:
//   - read_stored_lease(): its value is the input up to the first ':' (a waiter's mark), its id
//     the value up to the first ';'; a holder is read only from exactly four fields;
//   - a holder identity written with the input as its label (holder_suffix()) reads back with that
//     label (cut to 64 bytes), this host and this process id;
//   - LeaseId::from_hex() takes exactly 32 hex digits, and hex() gives them back in lower case;
//   - every kind's adopt() refuses (Error, invalid_argument) or makes a token whose value is the
//     input and whose id is its first 32 hex digits; the token's release and extend requests
//     build.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "leasehold/error.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/raw_lock.hpp"
#include "leasehold/rwlock.hpp"

namespace {

using namespace std::chrono_literals;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "unknown";
  return name;
}

void check_stored(std::string_view text) {
  const leasehold::StoredLease lease = leasehold::read_stored_lease(text);
  const std::string_view value = text.substr(0, text.find(':'));
  LEASEHOLD_FUZZ_CHECK(lease.value == value);
  LEASEHOLD_FUZZ_CHECK(lease.id_hex == value.substr(0, value.find(';')));
  if (lease.holder) {
    std::size_t separators = 0;
    for (const char c : value)
      separators += c == ';' ? 1 : 0;
    LEASEHOLD_FUZZ_CHECK(separators == 4);
  }
}

void check_holder_round_trip(std::string_view label) {
  if (label.empty())
    return;  // the process's own label
  const std::string value =
      leasehold::LeaseId::generate().hex() + leasehold::detail::holder_suffix(label);
  const leasehold::StoredLease lease = leasehold::read_stored_lease(value);
  LEASEHOLD_FUZZ_CHECK(lease.value == value, value);
  LEASEHOLD_FUZZ_CHECK(lease.holder.has_value(), value);
  LEASEHOLD_FUZZ_CHECK(lease.holder->label == label.substr(0, 64), value);
  LEASEHOLD_FUZZ_CHECK(lease.holder->pid == ::getpid(), value);
  static const std::string host = host_name().substr(0, 64);
  LEASEHOLD_FUZZ_CHECK(lease.holder->host == host, value);
}

void check_id(std::string_view text) {
  try {
    const leasehold::LeaseId id = leasehold::LeaseId::from_hex(text);
    LEASEHOLD_FUZZ_CHECK(text.size() == 32);
    LEASEHOLD_FUZZ_CHECK(id.hex() == lower(text), id.hex());
  } catch (const leasehold::Error& e) {
    LEASEHOLD_FUZZ_CHECK(e.code() == leasehold::errc::invalid_argument, e.what());
  }
}

// Token: a kind's token adopted from `text`, or an Error.
template <class Adopt>
void check_adopt(std::string_view text, Adopt adopt) {
  try {
    const auto token = adopt(text);
    LEASEHOLD_FUZZ_CHECK(token.value() == text);
    LEASEHOLD_FUZZ_CHECK(token.id().hex() == lower(text.substr(0, 32)));
    (void)token.release().request();
    (void)token.extend().request();
  } catch (const leasehold::Error& e) {
    LEASEHOLD_FUZZ_CHECK(e.code() == leasehold::errc::invalid_argument, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const leasehold::Lock<std::string> lock{"fuzz", 30s};
  static const leasehold::RawLock raw_lock{30s};
  static const leasehold::RwLock<std::string> rw_lock{"fuzz", 30s};
  const std::string_view text = leasehold::fuzz::as_text(data, size);

  check_stored(text);
  (void)leasehold::detail::lock_holder(text);
  check_holder_round_trip(text);
  check_id(text);
  check_adopt(text, [](std::string_view value) { return lock.adopt("name", value); });
  check_adopt(text, [](std::string_view value) { return raw_lock.adopt("key", value); });
  check_adopt(text, [](std::string_view value) { return rw_lock.adopt_write("name", value); });
  check_adopt(text, [](std::string_view value) { return rw_lock.adopt_read("name", value); });
  return 0;
}
