// leasehold fence check: a deploy script's guard against acting on a stale lease. It records
// FENCE for RESOURCE unless a newer fence is recorded (FenceRecords, fence.hpp), and says which.
#include <charconv>
#include <iostream>

#include "cli.hpp"
#include "displayable.hpp"
#include "inspect.hpp"

namespace leasehold::cli {
namespace {

std::uint64_t parse_fence(const std::string& text) {
  std::uint64_t fence = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, fence);
  if (text.empty() || text.front() == '-' || text.front() == '+' || error != std::errc() ||
      at != end)
    throw UsageError{
        "fence check: FENCE must be a non-negative integer (a fencing number such "
        "as LEASEHOLD_FENCE), got '" +
        displayable(text) + "'"};
  return fence;
}

void print(const FenceCheckOptions& options, std::uint64_t fence, const FenceVerdict& verdict) {
  if (options.json) {
    std::cout << json_text(Json{{"resource", options.resource},
                                {"fence", fence},
                                {"newest", verdict.newest},
                                {"accepted", verdict.accepted}})
              << "\n";
    return;
  }
  const std::string resource = "'" + displayable(options.resource) + "'";
  if (verdict.accepted)
    std::cout << resource << ": fence " << fence << " is the newest; recorded\n";
  else
    std::cout << resource << ": fence " << fence << " is older than " << verdict.newest
              << ", the newest recorded: refused (a newer holder has acted)\n";
}

}  // namespace

int fence_check(const Globals& globals, const FenceCheckOptions& options) {
  if (options.resource.empty())
    throw UsageError{"fence check: RESOURCE must not be empty"};
  const std::uint64_t fence = parse_fence(options.fence);
  const FenceRecords records(globals.prefix);
  Client redis = connect_or_exit(globals);
  FenceVerdict verdict;
  try {
    verdict = redis.process(records.check(options.resource, fence));
  } catch (const Error& e) {
    if (e.code() == errc::wrong_type ||
        std::string_view(e.what()).find("not a fence record") != std::string_view::npos) {
      warn("fence check: " + records.key(options.resource) +
           " holds something else than a fence record (" + e.what() +
           "); name another resource, or delete that key if it is stale");
      return kExitDataErr;
    }
    exit_unavailable(e);
  }
  if (!globals.quiet || options.json)
    print(options, fence, verdict);
  return verdict.accepted ? 0 : kExitFenceRefused;
}

}  // namespace leasehold::cli
