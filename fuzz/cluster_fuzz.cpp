// What a Redis Cluster node tells: redirections (MOVED, ASK, as error replies) and CLUSTER SLOTS
// replies, read by the router. The input is RESP (read by the connection's reader); each reply
// goes to the router's verdicts, and its text (an error's, a status's) to parse_redirection().
//
// Checks:
//   - a redirection that parses names a slot below 16384, a port from 1 to 65535, and a host
//     (the node's own when it gives none); written back, it parses to the same;
//   - judge_reply() follows or asks only for a redirection that parses, and delays a retry only
//     before the call's deadline;
//   - a slot map that parses (parse_slot_map(), judge_slots_reply()) has ranges within the 16384
//     slots, each first <= last, each master with a host and a port.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster_protocol.hpp"
#include "cluster_router.hpp"
#include "fuzz_support.hpp"
#include "leasehold/slot.hpp"

namespace {

using leasehold::RedisUrl;
using leasehold::Reply;
namespace detail = leasehold::detail;

constexpr std::string_view kNodeHost = "10.0.0.7";

void check_redirection(std::string_view message) {
  std::uint16_t slot = 0;
  RedisUrl::Endpoint endpoint;
  if (!detail::parse_redirection(message, slot, endpoint, kNodeHost))
    return;
  LEASEHOLD_FUZZ_CHECK(slot < leasehold::kClusterSlots);
  LEASEHOLD_FUZZ_CHECK(endpoint.port != 0);
  LEASEHOLD_FUZZ_CHECK(!endpoint.host.empty());
  if (endpoint.host.find_first_of("[] ") != std::string::npos)
    return;
  const std::string written = "MOVED " + std::to_string(slot) + " " + endpoint.address();
  std::uint16_t slot_again = 0;
  RedisUrl::Endpoint again;
  LEASEHOLD_FUZZ_CHECK(detail::parse_redirection(written, slot_again, again, "elsewhere"), written);
  LEASEHOLD_FUZZ_CHECK(slot_again == slot && again == endpoint, written);
}

void check_ranges(const std::vector<detail::SlotRange>& ranges) {
  for (const detail::SlotRange& range : ranges) {
    LEASEHOLD_FUZZ_CHECK(range.first <= range.last);
    LEASEHOLD_FUZZ_CHECK(range.last < leasehold::kClusterSlots);
    LEASEHOLD_FUZZ_CHECK(range.master.port != 0);
  }
}

void check_reply(const Reply& reply) {
  if (reply.type == Reply::Type::error || reply.type == Reply::Type::status ||
      reply.type == Reply::Type::string)
    check_redirection(reply.str);

  const leasehold::Clock::time_point now{std::chrono::hours(24)};
  for (const int redirections : {0, detail::kMaxRedirections}) {
    for (const auto left : {std::chrono::milliseconds(0), std::chrono::milliseconds(1000)}) {
      const detail::ReplyContext context{"10.0.0.7:7001", kNodeHost, "seed:7000",
                                         redirections,    now,       now + left};
      const detail::ReplyVerdict verdict = detail::judge_reply(reply, context);
      using Action = detail::ReplyVerdict::Action;
      switch (verdict.action) {
        case Action::deliver:
          break;
        case Action::follow:
        case Action::ask:
          LEASEHOLD_FUZZ_CHECK(reply.is_error() && redirections < detail::kMaxRedirections);
          LEASEHOLD_FUZZ_CHECK(verdict.target.port != 0 && !verdict.target.host.empty());
          LEASEHOLD_FUZZ_CHECK(verdict.slot < leasehold::kClusterSlots);
          break;
        case Action::retry_later:
          LEASEHOLD_FUZZ_CHECK(reply.is_error() && verdict.delay.count() > 0);
          LEASEHOLD_FUZZ_CHECK(now + verdict.delay < context.deadline);
          break;
        case Action::fail:
          LEASEHOLD_FUZZ_CHECK(static_cast<bool>(verdict.failure.error));
          break;
      }
    }
  }

  std::vector<detail::SlotRange> ranges;
  const bool parsed = detail::parse_slot_map(reply, "10.0.0.7", ranges);
  if (parsed) {
    LEASEHOLD_FUZZ_CHECK(!ranges.empty());
    check_ranges(ranges);
    for (const detail::SlotRange& range : ranges)
      LEASEHOLD_FUZZ_CHECK(!range.master.host.empty());
  }
  const RedisUrl::Endpoint asked{"10.0.0.7", 7001};
  const detail::SlotsVerdict verdict = detail::judge_slots_reply(asked, {}, {}, {reply});
  LEASEHOLD_FUZZ_CHECK((verdict.action == detail::SlotsVerdict::Action::apply) == parsed);
  if (verdict.action == detail::SlotsVerdict::Action::apply)
    check_ranges(verdict.ranges);
  else
    LEASEHOLD_FUZZ_CHECK(static_cast<bool>(verdict.failure.error));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = leasehold::fuzz::as_text(data, size);
  check_redirection(text);
  for (const Reply& reply : leasehold::fuzz::read_replies(text, 16))
    check_reply(reply);
  return 0;
}
