// A new connection's setup (Handshake) on any bytes from the server: the replies to AUTH,
// SELECT, CLIENT SETNAME, PING, TIME, HELLO and ROLE, which set the server's clock offset (the
// holders' "since when") and its version (Redis 6 mode).
//
// The first byte chooses the setup (a password, a user, a database, a client name, a master that
// a sentinel named), the second where the rest is cut in two reads. Checks: a failure has an error
// code and a sentence; after a setup without error, the clock offset and the version's major
// number are read without failing (UBSan watches the arithmetic on TIME's numbers).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "codec.hpp"
#include "failure.hpp"
#include "fuzz_support.hpp"
#include "handshake.hpp"
#include "leasehold/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  const std::uint8_t setup = data[0];
  const std::size_t cut = data[1];
  std::string_view bytes = leasehold::fuzz::as_text(data + 2, size - 2);

  leasehold::RedisUrl url;
  url.host = "10.0.0.7";
  if (setup & 1) {
    url.has_password = true;
    url.password = "secret";
  }
  if (setup & 2)
    url.user = "app";
  if (setup & 4)
    url.db = 3;
  const std::string_view name = (setup & 8) ? "worker" : "";
  const bool expect_master = (setup & 16) != 0;

  const auto sent = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  leasehold::detail::Handshake handshake(url, name, expect_master, sent);
  LEASEHOLD_FUZZ_CHECK(!handshake.request().empty());

  leasehold::codec::ReplyReader reader;
  std::optional<leasehold::detail::Failure> verdict;
  const std::string_view reads[] = {bytes.substr(0, std::min(cut, bytes.size())),
                                    bytes.substr(std::min(cut, bytes.size()))};
  for (const std::string_view read : reads) {
    reader.feed(read.data(), read.size());
    verdict = handshake.on_bytes(reader, sent + std::chrono::milliseconds(2));
    if (verdict)
      break;
  }
  if (!verdict)
    return 0;
  if (*verdict) {
    LEASEHOLD_FUZZ_CHECK(!verdict->detail.empty());
    return 0;
  }
  (void)handshake.server_clock_offset();
  (void)handshake.server_major_version();
  return 0;
}
