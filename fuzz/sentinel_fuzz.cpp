// Redis Sentinel discovery (SentinelDiscovery) on any bytes from a sentinel: the replies to
// AUTH, SENTINEL GET-MASTER-ADDR-BY-NAME, SENTINEL SENTINELS and SENTINEL REPLICAS, then the
// messages of a watched sentinel (+switch-master, +promoted-slave).
//
// The first byte chooses the setup (sentinel credentials or not), the second where the rest is
// cut in two reads. Checks: a master named has a host and a port, and a number of replicas that
// is not negative; every sentinel learnt of has a host and a port; a failed round has an error
// code and a sentence naming the sentinel; a switch of master names a host and a port.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

#include "codec.hpp"
#include "fuzz_support.hpp"
#include "leasehold/url.hpp"
#include "sentinel_discovery.hpp"

namespace {

using Endpoint = leasehold::RedisUrl::Endpoint;

void check_sentinels(const leasehold::detail::SentinelDiscovery& discovery) {
  for (const Endpoint& sentinel : discovery.sentinels())
    LEASEHOLD_FUZZ_CHECK(!sentinel.host.empty() && sentinel.port != 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  const std::uint8_t setup = data[0];
  const std::size_t cut = data[1];
  const std::string_view bytes = leasehold::fuzz::as_text(data + 2, size - 2);

  static const leasehold::RedisUrl plain =
      leasehold::RedisUrl::parse("redis-sentinel://s1:26379,s2:26380/mymaster");
  static const leasehold::RedisUrl with_auth = leasehold::RedisUrl::parse(
      "redis-sentinel://s1:26379,s2:26380/mymaster?sentinel_user=watch&sentinel_password=pw");
  leasehold::detail::SentinelDiscovery discovery((setup & 1) ? with_auth : plain);
  const auto order = discovery.start_round();
  LEASEHOLD_FUZZ_CHECK(!order.empty());
  discovery.asking(order.front());

  leasehold::codec::ReplyReader reader;
  std::optional<leasehold::detail::SentinelDiscovery::Answer> answer;
  const std::string_view reads[] = {bytes.substr(0, std::min(cut, bytes.size())),
                                    bytes.substr(std::min(cut, bytes.size()))};
  for (const std::string_view read : reads) {
    if (!reader.error_text().empty())
      break;  // malformed: the connection drops the reader
    reader.feed(read.data(), read.size());
    if (!answer)
      answer = discovery.on_bytes(reader);
  }
  check_sentinels(discovery);
  if (!answer)
    return 0;
  if (answer->master) {
    LEASEHOLD_FUZZ_CHECK(!answer->master->host.empty() && answer->master->port != 0);
    LEASEHOLD_FUZZ_CHECK(answer->replicas.value_or(0) >= 0);
  } else {
    const leasehold::detail::Failure failure = discovery.round_failure();
    LEASEHOLD_FUZZ_CHECK(static_cast<bool>(failure.error) && !failure.detail.empty());
  }

  // A watched sentinel's messages, after its answers.
  for (int i = 0; i < 16; ++i) {
    std::error_code ec;
    leasehold::Reply* push = reader.next(ec);
    if (ec || push == nullptr)
      break;
    if (const auto master = discovery.switched_master(*push)) {
      LEASEHOLD_FUZZ_CHECK(!master->host.empty() && master->port != 0);
      discovery.ask_first(*master);
    }
  }
  check_sentinels(discovery);
  return 0;
}
