#include "cluster_protocol.hpp"

#include <charconv>

#include "leasehold/slot.hpp"

namespace leasehold::detail {
namespace {

// The whole of `text` as a number.
template <class Int>
bool parse_whole(std::string_view text, Int& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

}  // namespace

bool parse_redirection(std::string_view message, std::uint16_t& slot, RedisUrl::Endpoint& endpoint,
                       std::string_view replying_host) {
  const auto first = message.find(' ');
  const auto second = message.find(' ', first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos)
    return false;
  const std::string_view slot_text = message.substr(first + 1, second - first - 1);
  const std::string_view address = message.substr(second + 1);
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos)
    return false;
  unsigned slot_value = 0;
  unsigned port = 0;
  const std::string_view port_text = address.substr(colon + 1);
  if (!parse_whole(slot_text, slot_value) || !parse_whole(port_text, port) ||
      slot_value >= kClusterSlots || port == 0 || port > 65535)
    return false;
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  slot = static_cast<std::uint16_t>(slot_value);
  endpoint.host = std::string(host.empty() ? replying_host : host);
  endpoint.port = static_cast<std::uint16_t>(port);
  return true;
}

bool parse_slot_map(const Reply& slots, const std::string& asked_host,
                    std::vector<SlotRange>& ranges) {
  ranges.clear();
  if (slots.type != Reply::Type::array || slots.elements.empty())
    return false;
  for (const Reply& range : slots.elements) {
    if (range.type != Reply::Type::array || range.elements.size() < 3 ||
        range.elements[0].type != Reply::Type::integer ||
        range.elements[1].type != Reply::Type::integer ||
        range.elements[2].type != Reply::Type::array || range.elements[2].elements.size() < 2 ||
        range.elements[2].elements[1].type != Reply::Type::integer)
      return false;
    const std::int64_t first = range.elements[0].integer;
    const std::int64_t last = range.elements[1].integer;
    const Reply& master = range.elements[2];
    const std::int64_t port = master.elements[1].integer;
    if (first < 0 || last >= kClusterSlots || first > last || port <= 0 || port > 65535)
      return false;
    SlotRange parsed;
    parsed.first = static_cast<std::size_t>(first);
    parsed.last = static_cast<std::size_t>(last);
    parsed.master.host = master.elements[0].str;
    // An empty or '?' host: the node does not know its own address; it is the one asked.
    if (parsed.master.host.empty() || parsed.master.host == "?")
      parsed.master.host = asked_host;
    parsed.master.port = static_cast<std::uint16_t>(port);
    ranges.push_back(std::move(parsed));
  }
  return true;
}

}  // namespace leasehold::detail
