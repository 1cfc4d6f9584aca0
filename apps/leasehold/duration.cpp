#include <charconv>
#include <cmath>

#include "cli.hpp"

namespace leasehold::cli {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() &&
         ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.'))
    ++unit_at;
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = text.substr(unit_at);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      number.find('.') != number.rfind('.'))
    return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size())
    return std::nullopt;
  double factor = 0;
  if (unit == "ms")
    factor = 1;
  else if (unit == "s")
    factor = 1000;
  else if (unit == "m")
    factor = 60'000;
  else if (unit == "h")
    factor = 3'600'000;
  else
    return std::nullopt;
  const double ms = value * factor;
  if (!std::isfinite(ms) || ms > 1e15)
    return std::nullopt;
  return std::chrono::milliseconds(static_cast<long long>(std::llround(ms)));
}

std::chrono::milliseconds require_duration(std::string_view flag, std::string_view text) {
  const auto parsed = parse_duration(text);
  if (!parsed) {
    throw UsageError{std::string(flag) + ": '" + std::string(text) +
                     "' is not a duration; use a number and a unit: 250ms, 30s, 1.5s, 5m, 1h"};
  }
  return *parsed;
}

std::string format_duration(std::chrono::milliseconds d) {
  const long long ms = d.count();
  if (ms < 1000)
    return std::to_string(ms) + " ms";
  if (ms < 60'000) {
    const long long tenths = (ms + 50) / 100;
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
  }
  const long long seconds = ms / 1000;
  if (seconds < 3600)
    return std::to_string(seconds / 60) + " m " + std::to_string(seconds % 60) + " s";
  return std::to_string(seconds / 3600) + " h " + std::to_string(seconds % 3600 / 60) + " m";
}

}  // namespace leasehold::cli
