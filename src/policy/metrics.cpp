#include "leasehold/metrics.hpp"

#include <charconv>
#include <chrono>

namespace leasehold {
namespace {

// Seconds: from a millisecond acquire to an hour's hold or cron run.
constexpr Metrics::Histogram::Bounds kSeconds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                              0.5,   1,      2.5,   5,    10,    30,   300, 3600};
// Places in a queue.
constexpr Metrics::Histogram::Bounds kPlaces{1,  2,  3,  4,  5,   6,   8,   10,
                                             15, 20, 30, 50, 100, 200, 500, 1000};

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A sample value as Prometheus reads it: the shortest text that reads back as the same double.
void append_number(std::string& out, double value) {
  char digits[32];
  const auto written = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, written.ptr);
}
void append_number(std::string& out, std::uint64_t value) {
  char digits[24];
  const auto written = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, written.ptr);
}

// A label value: backslash, double quote and line feed escaped, as the format wants.
std::string label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void append_header(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

// One sample: name{labels} value.
void append_sample(std::string& out, std::string_view name, std::string_view labels,
                   std::uint64_t value) {
  out.append(name);
  if (!labels.empty())
    out.append("{").append(labels).append("}");
  out += ' ';
  append_number(out, value);
  out += '\n';
}

template <std::size_t N>
void append_counter(std::string& out, std::string_view name, std::string_view help,
                    std::string_view label, const std::array<std::string_view, N>& values,
                    const std::array<std::uint64_t, N>& counts) {
  append_header(out, name, "counter", help);
  for (std::size_t i = 0; i < N; ++i)
    append_sample(out, name, std::string(label) + "=\"" + std::string(values[i]) + "\"", counts[i]);
}

constexpr std::array<std::string_view, 4> kAcquireOutcomes{"acquired", "busy", "failed",
                                                           "cancelled"};
constexpr std::array<std::string_view, 3> kReleaseOutcomes{"released", "lost", "failed"};
constexpr std::array<std::string_view, 3> kExtensionOutcomes{"extended", "refused", "failed"};
constexpr std::array<std::string_view, 4> kLossCauses{"expired_or_taken_over", "unreachable",
                                                      "closed", "hold_budget"};
constexpr std::array<std::string_view, 3> kCronOutcomes{"ran", "skipped", "failed"};

}  // namespace

void Metrics::Histogram::observe(double value) {
  for (std::size_t i = 0; i < kBuckets; ++i)
    if (value <= (*bounds_)[i])
      ++counts_[i];
  ++count_;
  sum_ += value;
}

void Metrics::Histogram::render(std::string& out, const std::string& name,
                                const std::string& labels) const {
  for (std::size_t i = 0; i <= kBuckets; ++i) {
    out.append(name).append("_bucket{").append(labels).append("le=\"");
    if (i < kBuckets)
      append_number(out, (*bounds_)[i]);
    else
      out.append("+Inf");
    out.append("\"} ");
    append_number(out, i < kBuckets ? counts_[i] : count_);
    out += '\n';
  }
  // The labels without their trailing comma, in braces ("" when there are none).
  std::string braced;
  if (!labels.empty()) {
    braced.append("{").append(labels, 0, labels.size() - 1).append("}");
  }
  out.append(name).append("_sum").append(braced).append(" ");
  append_number(out, sum_);
  out.append("\n").append(name).append("_count").append(braced).append(" ");
  append_number(out, count_);
  out += '\n';
}

Metrics::Metrics()
    : acquire_wait_(kSeconds),
      held_(kSeconds),
      extension_time_left_(kSeconds),
      wait_position_(kPlaces) {}

void Metrics::on_acquire(const AcquireEvent& event) {
  std::lock_guard lock(mutex_);
  ++acquires_[static_cast<std::size_t>(event.outcome)];
  acquire_wait_.observe(seconds(event.waited));
}

void Metrics::on_release(const ReleaseEvent& event) {
  std::lock_guard lock(mutex_);
  ++releases_[static_cast<std::size_t>(event.outcome)];
  held_.observe(seconds(event.held_for));
}

void Metrics::on_extension(const ExtensionEvent& event) {
  std::lock_guard lock(mutex_);
  ++extensions_[static_cast<std::size_t>(event.outcome)];
  extension_time_left_.observe(seconds(event.time_left));
}

void Metrics::on_loss(const LossEvent& event) {
  std::lock_guard lock(mutex_);
  ++losses_[static_cast<std::size_t>(event.cause)];
}

void Metrics::on_cron_tick(const CronTickEvent& event) {
  std::lock_guard lock(mutex_);
  auto job = cron_jobs_.find(event.job);
  if (job == cron_jobs_.end())
    job = cron_jobs_.emplace(std::string(event.job), CronJob{{}, Histogram(kSeconds)}).first;
  ++job->second.ticks[static_cast<std::size_t>(event.outcome)];
  if (event.outcome == CronTickEvent::Outcome::ran)
    job->second.run_seconds.observe(seconds(event.duration));
}

void Metrics::on_wait(const WaitEvent& event) {
  std::lock_guard lock(mutex_);
  wait_position_.observe(static_cast<double>(event.position));
}

void Metrics::on_reconnect(const ReconnectEvent&) {
  std::lock_guard lock(mutex_);
  ++reconnects_;
}

std::string Metrics::prometheus_text() const {
  std::lock_guard lock(mutex_);
  std::string out;
  append_counter(out, "leasehold_acquires_total",
                 "Acquires (a try, or a wait in turn from its start), by outcome.", "outcome",
                 kAcquireOutcomes, acquires_);
  append_header(out, "leasehold_acquire_wait_seconds", "histogram",
                "Time from an acquire's start to its outcome.");
  acquire_wait_.render(out, "leasehold_acquire_wait_seconds", "");
  append_counter(out, "leasehold_releases_total",
                 "Releases of leases by their holders, by outcome.", "outcome", kReleaseOutcomes,
                 releases_);
  append_header(out, "leasehold_held_seconds", "histogram",
                "How long released leases were held, from their acquire to their release.");
  held_.render(out, "leasehold_held_seconds", "");
  append_counter(out, "leasehold_extensions_total",
                 "Extensions of leases (by keep-alives and callers), by outcome.", "outcome",
                 kExtensionOutcomes, extensions_);
  append_header(out, "leasehold_extension_time_left_seconds", "histogram",
                "How long a lease had left when its extension was sent.");
  extension_time_left_.render(out, "leasehold_extension_time_left_seconds", "");
  append_counter(out, "leasehold_losses_total", "Leases reported lost by keep-alives, by cause.",
                 "cause", kLossCauses, losses_);
  append_header(out, "leasehold_wait_position", "histogram",
                "A waiter's place in its queue (1: the head) at each refused try.");
  wait_position_.render(out, "leasehold_wait_position", "");
  append_header(out, "leasehold_reconnects_total", "counter",
                "Connections to Redis lost and made again.");
  append_sample(out, "leasehold_reconnects_total", "", reconnects_);
  append_header(out, "leasehold_cron_ticks_total", "counter", "Cron ticks, by job and outcome.");
  for (const auto& [name, job] : cron_jobs_)
    for (std::size_t i = 0; i < kCronOutcomes.size(); ++i)
      append_sample(
          out, "leasehold_cron_ticks_total",
          "job=\"" + label_value(name) + "\",outcome=\"" + std::string(kCronOutcomes[i]) + "\"",
          job.ticks[i]);
  append_header(out, "leasehold_cron_run_seconds", "histogram", "How long cron runs took.");
  for (const auto& [name, job] : cron_jobs_)
    job.run_seconds.render(out, "leasehold_cron_run_seconds", "job=\"" + label_value(name) + "\",");
  return out;
}

}  // namespace leasehold
