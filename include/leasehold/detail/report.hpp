// What the lease queries tell a client's observer (Query::report): each acquire, release and
// extension, whoever ran it. Internal: the events are observer.hpp's.
#pragma once

#include <string_view>
#include <system_error>

#include "leasehold/detail/lease_state.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/observer.hpp"
#include "leasehold/query.hpp"

namespace leasehold::detail {

// One try to acquire `key`: granted, refused (another holds it), or failed with `error`.
void report_acquire(Observer& observer, std::string_view key, bool granted, std::error_code error,
                    const Timing& timing) noexcept;

// The release of `lease`: done, refused (this id no longer held it: lost), or failed.
void report_release(Observer& observer, const LeaseState& lease, bool released,
                    std::error_code error, const Timing& timing) noexcept;

// The extension of `lease`, which was to run out at `deadline_before`: done, refused (lost), or
// failed.
void report_extension(Observer& observer, const LeaseState& lease,
                      Clock::time_point deadline_before, bool extended, std::error_code error,
                      const Timing& timing) noexcept;

// An acquire's outcome, reported with the key its token holds or, with none, the one it tried.
template <class Token>
void report_try(Observer& observer, std::string_view tried_key,
                const Result<std::optional<Token>>& outcome, const Timing& timing) noexcept {
  const bool granted = outcome.has_value() && outcome->has_value();
  report_acquire(observer, granted ? std::string_view((*outcome)->key()) : tried_key, granted,
                 outcome.error(), timing);
}

}  // namespace leasehold::detail
