// The command's durations (--ttl, --wait, --every, --max-time, ...) on any text.
//
// Checks: a duration is never negative nor more than 10^15 ms; require_duration() agrees with
// parse_duration() and throws only UsageError; the duration written in milliseconds parses to
// itself, and in a larger unit to the same value when it divides exactly; format_duration() of
// it is not empty.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cli.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using leasehold::cli::parse_duration;
  using std::chrono::milliseconds;
  const std::string_view text = leasehold::fuzz::as_text(data, size);

  const std::optional<milliseconds> parsed = parse_duration(text);
  std::optional<milliseconds> required;
  try {
    required = leasehold::cli::require_duration("--ttl", text);
  } catch (const leasehold::cli::UsageError& e) {
    LEASEHOLD_FUZZ_CHECK(!e.message.empty());
  }
  LEASEHOLD_FUZZ_CHECK(parsed == required);
  if (!parsed)
    return 0;

  const long long ms = parsed->count();
  LEASEHOLD_FUZZ_CHECK(ms >= 0 && ms <= 1'000'000'000'000'000, std::to_string(ms));
  LEASEHOLD_FUZZ_CHECK(parse_duration(std::to_string(ms) + "ms") == parsed, std::to_string(ms));
  if (ms % 1000 == 0)
    LEASEHOLD_FUZZ_CHECK(parse_duration(std::to_string(ms / 1000) + "s") == parsed);
  if (ms % 3'600'000 == 0)
    LEASEHOLD_FUZZ_CHECK(parse_duration(std::to_string(ms / 3'600'000) + "h") == parsed);
  LEASEHOLD_FUZZ_CHECK(!leasehold::cli::format_duration(*parsed).empty());
  return 0;
}
