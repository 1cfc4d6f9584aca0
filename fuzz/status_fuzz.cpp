// Status replies: what lease_status() and describe() read of a name (lease_status.lua's reply:
// {now, the string key's value, its PTTL, waiters, fence, permits, then each set member and its
// score}), for every kind, and what foreign_keys() reads (the TYPE of each key). The input is
// RESP (read by the connection's reader); every reply it holds goes to every reader.
//
// Checks:
//   - an error reply is a failed outcome whose code is classify_error_reply()'s; a failed
//     outcome carries an error code;
//   - a status has one lease for a non-empty string value and one per set member, each with at
//     most 8 characters of its id; its fence and permits are the reply's when not negative;
//   - describe() gives the same leases as lease_status();
//   - foreign_keys() names only keys whose type is neither "none" nor the expected one.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "leasehold/describe.hpp"

namespace {

using leasehold::fuzz::check_failure;

using namespace std::chrono_literals;
using leasehold::Reply;
using leasehold::Result;
using leasehold::Timing;

const leasehold::Lock<std::string> kLock{"fuzz", 30s};
const leasehold::RwLock<std::string> kRwLock{"fuzz", 30s};
const leasehold::Semaphore<std::string> kSemaphore{"fuzz", 3, 30s};
const leasehold::RawLock kRawLock{30s};

std::optional<std::uint64_t> counter(const Reply& field) {
  if (field.integer < 0)
    return std::nullopt;
  return static_cast<std::uint64_t>(field.integer);
}

template <class L>
void check_status(const leasehold::LeaseStatusQuery<L>& query, const Reply& reply,
                  const Timing& timing) {
  const Result<leasehold::LeaseStatus> status = query.parse(reply, timing);
  check_failure(reply, status);
  const leasehold::LeaseStatusQuery<> any(query);
  const Result<leasehold::LeaseStatus> as_any = any.parse(reply, timing);
  LEASEHOLD_FUZZ_CHECK(static_cast<bool>(as_any) == static_cast<bool>(status));
  if (!status)
    return;
  const std::vector<Reply>& e = reply.elements;
  const std::size_t expected = (e.at(1).str.empty() ? 0 : 1) + (e.size() - 6) / 2;
  LEASEHOLD_FUZZ_CHECK(status->leases.size() == expected, leasehold::to_string(reply));
  for (const leasehold::LeaseInfo& lease : status->leases)
    LEASEHOLD_FUZZ_CHECK(lease.id_prefix.size() <= 8);
  LEASEHOLD_FUZZ_CHECK(status->fence == counter(e.at(4)));
  LEASEHOLD_FUZZ_CHECK(status->permits == counter(e.at(5)));
}

template <class Describe>
void check_describe(const Describe& query, const Reply& reply, const Timing& timing,
                    std::optional<std::size_t> leases) {
  const auto described = query.parse(reply, timing);
  check_failure(reply, described);
  if (described && leases)
    LEASEHOLD_FUZZ_CHECK(described->size() == *leases);
}

void check_foreign(const std::vector<leasehold::LeaseKey>& keys, const Reply& reply,
                   const Timing& timing) {
  const auto found = leasehold::foreign_keys(keys).parse(reply, timing);
  check_failure(reply, found);
  if (!found)
    return;
  LEASEHOLD_FUZZ_CHECK(found->size() <= keys.size());
  for (const leasehold::ForeignKey& foreign : *found)
    LEASEHOLD_FUZZ_CHECK(foreign.type != "none" && foreign.type != foreign.expected.type);
}

void check_reply(const Reply& reply, const Timing& timing) {
  const std::string name = "name";
  check_status(leasehold::lease_status(kLock, name), reply, timing);
  check_status(leasehold::lease_status(kLock.with_fencing(), name), reply, timing);
  check_status(leasehold::lease_status(kRwLock, name), reply, timing);
  check_status(leasehold::lease_status(kSemaphore, name), reply, timing);
  check_status(leasehold::lease_status(kRawLock, "key"), reply, timing);

  const Result<leasehold::LeaseStatus> status =
      leasehold::lease_status(kRwLock, name).parse(reply, timing);
  const std::optional<std::size_t> leases =
      status ? std::optional<std::size_t>(status->leases.size()) : std::nullopt;
  check_describe(leasehold::describe(kLock, name), reply, timing, std::nullopt);
  check_describe(leasehold::describe(kRwLock, name), reply, timing, leases);
  check_describe(leasehold::describe(kSemaphore, name), reply, timing, std::nullopt);

  check_foreign(leasehold::lease_keys(kLock, name), reply, timing);
  check_foreign(leasehold::lease_keys(kRwLock, name), reply, timing);
  check_foreign(leasehold::lease_keys(kSemaphore, name), reply, timing);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<Reply> replies =
      leasehold::fuzz::read_replies(leasehold::fuzz::as_text(data, size), 16);
  const leasehold::Clock::time_point sent{std::chrono::hours(24)};
  for (const Reply& reply : replies)
    check_reply(reply, Timing{sent, sent + 1ms});
  return 0;
}
