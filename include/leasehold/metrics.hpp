// Metrics: an Observer that counts what happens to leases and renders it in the Prometheus text
// exposition format (version 0.0.4), for an application's own /metrics endpoint or for
// node_exporter's textfile collector.
//
//   auto metrics = std::make_shared<leasehold::Metrics>();
//   leasehold::ClientOptions options;
//   options.observer = metrics;
//   leasehold::Client redis(url, options);
//   ...
//   http_response(200, "text/plain; version=0.0.4", metrics->prometheus_text());
//
// Counters and histograms are per process and never reset. Lease keys are not labels (a label per
// key would make a series per invoice); cron jobs are, by name. The metrics and their labels are
// listed in docs/observability.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "leasehold/observer.hpp"

namespace leasehold {

class Metrics : public Observer {
 public:
  Metrics();

  void on_acquire(const AcquireEvent& event) override;
  void on_release(const ReleaseEvent& event) override;
  void on_extension(const ExtensionEvent& event) override;
  void on_loss(const LossEvent& event) override;
  void on_cron_tick(const CronTickEvent& event) override;
  void on_wait(const WaitEvent& event) override;
  void on_reconnect(const ReconnectEvent& event) override;

  // Every metric, in the Prometheus text exposition format.
  std::string prometheus_text() const;

  // A cumulative histogram: counts of observations at or below each bound, their sum and count.
  class Histogram {
   public:
    static constexpr std::size_t kBuckets = 16;
    // Bounds of seconds (durations) or of places in a queue.
    using Bounds = std::array<double, kBuckets>;
    explicit Histogram(const Bounds& bounds) : bounds_(&bounds) {}
    void observe(double value);
    // Appends the `_bucket`, `_sum` and `_count` samples of `name`, with `labels` (`key="v",`
    // pairs, or empty) before `le`.
    void render(std::string& out, const std::string& name, const std::string& labels) const;

   private:
    const Bounds* bounds_;
    std::array<std::uint64_t, kBuckets> counts_{};  // observations at or below each bound
    std::uint64_t count_ = 0;
    double sum_ = 0;
  };

 private:
  struct CronJob {
    std::array<std::uint64_t, 3> ticks{};  // by CronTickEvent::Outcome
    Histogram run_seconds;
  };

  mutable std::mutex mutex_;
  std::array<std::uint64_t, 4> acquires_{};    // by AcquireEvent::Outcome
  std::array<std::uint64_t, 3> releases_{};    // by ReleaseEvent::Outcome
  std::array<std::uint64_t, 3> extensions_{};  // by ExtensionEvent::Outcome
  std::array<std::uint64_t, 4> losses_{};      // by LossEvent::Cause
  std::uint64_t reconnects_ = 0;
  Histogram acquire_wait_;
  Histogram held_;
  Histogram extension_time_left_;
  Histogram wait_position_;
  std::map<std::string, CronJob, std::less<>> cron_jobs_;
};

}  // namespace leasehold
