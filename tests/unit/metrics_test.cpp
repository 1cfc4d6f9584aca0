// Metrics: what the events count, and its Prometheus text read back by a small parser of the
// text exposition format (version 0.0.4): comments, samples, label escapes, histogram buckets.
#include "leasehold/metrics.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tell_observer.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Reads `name{label="value",...} number`; nothing if the line is not a well-formed sample.
std::optional<Sample> parse_sample(const std::string& line) {
  Sample sample;
  std::size_t at = 0;
  const auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  while (at < line.size() && name_char(line[at], at == 0))
    sample.name += line[at++];
  if (sample.name.empty())
    return std::nullopt;
  if (at < line.size() && line[at] == '{') {
    ++at;
    while (at < line.size() && line[at] != '}') {
      std::string label;
      while (at < line.size() && name_char(line[at], label.empty()))
        label += line[at++];
      if (label.empty() || line.compare(at, 2, "=\"") != 0)
        return std::nullopt;
      at += 2;
      std::string value;
      for (;; ++at) {
        if (at >= line.size())
          return std::nullopt;
        if (line[at] == '"')
          break;
        if (line[at] == '\\') {
          if (++at >= line.size())
            return std::nullopt;
          const char escaped = line[at];
          if (escaped == 'n')
            value += '\n';
          else if (escaped == '\\' || escaped == '"')
            value += escaped;
          else
            return std::nullopt;  // no other escape exists
        } else if (line[at] == '\n') {
          return std::nullopt;
        } else {
          value += line[at];
        }
      }
      ++at;  // the closing quote
      if (at < line.size() && line[at] == ',')
        ++at;
      sample.labels[label] = value;
    }
    if (at >= line.size())
      return std::nullopt;
    ++at;  // '}'
  }
  if (at >= line.size() || line[at] != ' ')
    return std::nullopt;
  const std::string number = line.substr(at + 1);
  std::size_t used = 0;
  try {
    sample.value = number == "+Inf" ? INFINITY : std::stod(number, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (number != "+Inf" && used != number.size())
    return std::nullopt;
  return sample;
}

// The whole text: every line a comment or a sample, every sample of a family with a TYPE line
// before it; fails the test otherwise.
struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;

  explicit Exposition(const std::string& text) {
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n') << "the text ends with a line feed";
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("# HELP ", 0) == 0)
        continue;
      if (line.rfind("# TYPE ", 0) == 0) {
        std::istringstream words(line.substr(7));
        std::string name, type;
        words >> name >> type;
        EXPECT_TRUE(type == "counter" || type == "histogram" || type == "gauge") << line;
        EXPECT_EQ(types.count(name), 0u) << "two TYPE lines for " << name;
        types[name] = type;
        continue;
      }
      const std::optional<Sample> sample = parse_sample(line);
      EXPECT_TRUE(sample) << "not a sample: " << line;
      if (!sample)
        continue;
      std::string family = sample->name;
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        if (types.count(family) == 0 && family.size() > std::strlen(suffix) &&
            family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
          family.resize(family.size() - std::strlen(suffix));
      EXPECT_EQ(types.count(family), 1u) << "no TYPE before " << line;
      samples.push_back(*sample);
    }
  }

  // The value of the one sample named `name` with exactly these labels.
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    std::optional<double> found;
    for (const Sample& sample : samples)
      if (sample.name == name && sample.labels == labels) {
        EXPECT_FALSE(found) << "two samples " << name;
        found = sample.value;
      }
    EXPECT_TRUE(found) << "no sample " << name;
    return found.value_or(-1);
  }

  // A histogram's buckets grow with `le`, and +Inf is its count.
  void expect_histogram(const std::string& name, std::map<std::string, std::string> labels = {}) {
    double previous = 0;
    double bound = -1;
    std::size_t buckets = 0;
    for (const Sample& sample : samples) {
      if (sample.name != name + "_bucket")
        continue;
      std::map<std::string, std::string> others = sample.labels;
      const std::string le = others["le"];
      others.erase("le");
      if (others != labels)
        continue;
      const double this_bound = le == "+Inf" ? INFINITY : std::stod(le);
      EXPECT_GT(this_bound, bound) << name << " buckets out of order";
      EXPECT_GE(sample.value, previous) << name << " buckets are cumulative";
      bound = this_bound;
      previous = sample.value;
      ++buckets;
    }
    EXPECT_GT(buckets, 1u) << name;
    EXPECT_EQ(bound, INFINITY) << name << " ends with +Inf";
    EXPECT_EQ(previous, value(name + "_count", labels)) << name << ": +Inf is the count";
  }
};

TEST(MetricsText, CountsEveryEventAndReadsBackAsTheExpositionFormat) {
  Metrics metrics;
  metrics.on_acquire({"k", AcquireEvent::Outcome::acquired, 3ms});
  metrics.on_acquire({"k", AcquireEvent::Outcome::acquired, 2s});
  metrics.on_acquire({"k", AcquireEvent::Outcome::busy, 1s});
  metrics.on_release({"k", ReleaseEvent::Outcome::released, 40ms});
  metrics.on_release({"k", ReleaseEvent::Outcome::lost, 7s});
  metrics.on_extension({"k", ExtensionEvent::Outcome::extended, 20s});
  metrics.on_extension({"k", ExtensionEvent::Outcome::refused, 1s});
  metrics.on_loss({"k", LossEvent::Cause::expired_or_taken_over, {}});
  metrics.on_wait({"k", 3});
  metrics.on_reconnect({"127.0.0.1:1", {}});
  const std::string odd_job = "re\"port\\ly\nnightly";
  metrics.on_cron_tick({odd_job, CronTickEvent::Outcome::ran, 1500ms});
  metrics.on_cron_tick({odd_job, CronTickEvent::Outcome::skipped, {}});
  metrics.on_cron_tick({"other", CronTickEvent::Outcome::failed, {}});

  Exposition text(metrics.prometheus_text());
  EXPECT_EQ(text.types["leasehold_acquires_total"], "counter");
  EXPECT_EQ(text.types["leasehold_acquire_wait_seconds"], "histogram");
  EXPECT_EQ(text.value("leasehold_acquires_total", {{"outcome", "acquired"}}), 2);
  EXPECT_EQ(text.value("leasehold_acquires_total", {{"outcome", "busy"}}), 1);
  EXPECT_EQ(text.value("leasehold_acquires_total", {{"outcome", "failed"}}), 0);
  EXPECT_EQ(text.value("leasehold_acquires_total", {{"outcome", "cancelled"}}), 0);
  EXPECT_EQ(text.value("leasehold_acquire_wait_seconds_count"), 3);
  EXPECT_DOUBLE_EQ(text.value("leasehold_acquire_wait_seconds_sum"), 3.003);
  EXPECT_EQ(text.value("leasehold_acquire_wait_seconds_bucket", {{"le", "0.005"}}), 1);
  EXPECT_EQ(text.value("leasehold_acquire_wait_seconds_bucket", {{"le", "1"}}), 2);
  EXPECT_EQ(text.value("leasehold_releases_total", {{"outcome", "released"}}), 1);
  EXPECT_EQ(text.value("leasehold_releases_total", {{"outcome", "lost"}}), 1);
  EXPECT_EQ(text.value("leasehold_extensions_total", {{"outcome", "extended"}}), 1);
  EXPECT_EQ(text.value("leasehold_extensions_total", {{"outcome", "refused"}}), 1);
  EXPECT_EQ(text.value("leasehold_losses_total", {{"cause", "expired_or_taken_over"}}), 1);
  EXPECT_EQ(text.value("leasehold_losses_total", {{"cause", "unreachable"}}), 0);
  EXPECT_EQ(text.value("leasehold_wait_position_bucket", {{"le", "2"}}), 0);
  EXPECT_EQ(text.value("leasehold_wait_position_bucket", {{"le", "3"}}), 1);
  EXPECT_EQ(text.value("leasehold_reconnects_total"), 1);
  EXPECT_EQ(text.value("leasehold_cron_ticks_total", {{"job", odd_job}, {"outcome", "ran"}}), 1)
      << "a job's name comes back through the label escapes";
  EXPECT_EQ(text.value("leasehold_cron_ticks_total", {{"job", odd_job}, {"outcome", "skipped"}}),
            1);
  EXPECT_EQ(text.value("leasehold_cron_ticks_total", {{"job", "other"}, {"outcome", "failed"}}), 1);
  EXPECT_DOUBLE_EQ(text.value("leasehold_cron_run_seconds_sum", {{"job", odd_job}}), 1.5);
  EXPECT_EQ(text.value("leasehold_cron_run_seconds_count", {{"job", "other"}}), 0)
      << "a failed tick ran nothing";
  for (const char* histogram : {"leasehold_acquire_wait_seconds", "leasehold_held_seconds",
                                "leasehold_extension_time_left_seconds", "leasehold_wait_position"})
    text.expect_histogram(histogram);
  text.expect_histogram("leasehold_cron_run_seconds", {{"job", odd_job}});
}

TEST(MetricsText, ANewRegistryHasEveryFamilyAtZero) {
  Metrics metrics;
  Exposition text(metrics.prometheus_text());
  EXPECT_EQ(text.value("leasehold_acquires_total", {{"outcome", "acquired"}}), 0);
  EXPECT_EQ(text.value("leasehold_reconnects_total"), 0);
  EXPECT_EQ(text.value("leasehold_held_seconds_count"), 0);
  EXPECT_EQ(text.types["leasehold_cron_ticks_total"], "counter") << "declared before any job";
}

TEST(MetricsText, AnObserverThatThrowsIsDroppedNotPropagated) {
  struct Throwing : Observer {
    void on_acquire(const AcquireEvent&) override { throw std::runtime_error("broken"); }
  } throwing;
  EXPECT_NO_THROW(detail::tell(static_cast<Observer*>(&throwing), &Observer::on_acquire,
                               AcquireEvent{"k", AcquireEvent::Outcome::busy, 0ms}));
  EXPECT_NO_THROW(detail::tell(static_cast<Observer*>(nullptr), &Observer::on_acquire,
                               AcquireEvent{"k", AcquireEvent::Outcome::busy, 0ms}));
}

}  // namespace
}  // namespace leasehold
