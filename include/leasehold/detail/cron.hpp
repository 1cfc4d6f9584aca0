// How cron.hpp's templates make a Job of a callable.
#pragma once

#include <functional>
#include <memory>
#include <system_error>
#include <type_traits>

namespace leasehold::cron {

struct Tick;          // cron.hpp
class IntervalLease;  // cron.hpp

namespace detail {

// A cron::Job.
using JobFunction = std::function<std::error_code(const Tick&)>;

// Any callable taking the Tick (or nothing) and returning void or std::error_code, as a Job.
template <class F>
JobFunction adapt_job(F job) {
  return [job = std::move(job)](const Tick& tick) mutable -> std::error_code {
    if constexpr (std::is_invocable_v<F&, const Tick&>) {
      if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tick&>>) {
        job(tick);
        return {};
      } else {
        return job(tick);
      }
    } else if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      job();
      return {};
    } else {
      return job();
    }
  };
}

JobFunction once_per_interval_job(std::shared_ptr<IntervalLease> lease, JobFunction job);

}  // namespace detail
}  // namespace leasehold::cron
