#include "history.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace leasehold::testing {
namespace {

constexpr std::array<std::string_view, 19> kKindNames = {"acquire_call",
                                                         "acquire_ok",
                                                         "acquire_fail",
                                                         "acquire_unknown",
                                                         "extend_ok",
                                                         "extend_fail",
                                                         "extend_unknown",
                                                         "release_call",
                                                         "release_ok",
                                                         "release_fail",
                                                         "release_unknown",
                                                         "cs_begin",
                                                         "cs_end",
                                                         "loss",
                                                         "fence",
                                                         "counter",
                                                         "counter_check",
                                                         "occupancy",
                                                         "fault"};
static_assert(static_cast<std::size_t>(EventKind::fault) + 1 == kKindNames.size());

template <class Integer>
bool parse_integer(std::string_view text, Integer& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc{} && end == text.data() + text.size();
}

void append_field(std::string& line, std::string_view key, std::string_view value) {
  line += ' ';
  line += key;
  line += '=';
  line += value;
}

void append_number(std::string& line, std::string_view key, std::int64_t value) {
  append_field(line, key, std::to_string(value));
}

}  // namespace

std::string_view to_string(EventKind kind) {
  return kKindNames.at(static_cast<std::size_t>(kind));
}

std::optional<EventKind> event_kind_from_string(std::string_view text) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == text)
      return static_cast<EventKind>(i);
  return std::nullopt;
}

std::string Event::to_line() const {
  std::string line = "t=" + std::to_string(t);
  append_number(line, "pid", pid);
  append_number(line, "tid", tid);
  append_field(line, "kind", to_string(kind));
  if (!name.empty())
    append_field(line, "name", name);
  if (lease != 0)
    append_field(line, "lease", std::to_string(lease));
  if (mode != 'w')
    append_field(line, "mode", std::string_view(&mode, 1));
  if (deadline != 0)
    append_number(line, "deadline", deadline);
  if (valid)
    append_field(line, "valid", "1");
  if (value != 0)
    append_number(line, "value", value);
  if (read != 0)
    append_number(line, "read", read);
  if (ok)
    append_field(line, "ok", "1");
  if (start != 0)
    append_number(line, "start", start);
  if (target != 0)
    append_number(line, "target", target);
  if (!detail.empty())
    append_field(line, "detail", detail);
  line += '\n';
  return line;
}

std::optional<Event> parse_event(std::string_view line) {
  if (!line.empty() && line.back() == '\n')
    line.remove_suffix(1);
  Event event;
  bool has_time = false;
  bool has_kind = false;
  while (!line.empty()) {
    const auto space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    const auto equals = field.find('=');
    if (equals == std::string_view::npos)
      return std::nullopt;
    const std::string_view key = field.substr(0, equals);
    const std::string_view value = field.substr(equals + 1);
    bool parsed = true;
    if (key == "t") {
      parsed = parse_integer(value, event.t);
      has_time = parsed;
    } else if (key == "pid") {
      parsed = parse_integer(value, event.pid);
    } else if (key == "tid") {
      parsed = parse_integer(value, event.tid);
    } else if (key == "kind") {
      const auto kind = event_kind_from_string(value);
      parsed = kind.has_value();
      if (kind)
        event.kind = *kind;
      has_kind = parsed;
    } else if (key == "name") {
      event.name = std::string(value);
    } else if (key == "lease") {
      parsed = parse_integer(value, event.lease);
    } else if (key == "mode") {
      parsed = value == "w" || value == "r" || value == "p";
      if (parsed)
        event.mode = value[0];
    } else if (key == "deadline") {
      parsed = parse_integer(value, event.deadline);
    } else if (key == "valid") {
      event.valid = value == "1";
    } else if (key == "value") {
      parsed = parse_integer(value, event.value);
    } else if (key == "read") {
      parsed = parse_integer(value, event.read);
    } else if (key == "ok") {
      event.ok = value == "1";
    } else if (key == "start") {
      parsed = parse_integer(value, event.start);
    } else if (key == "target") {
      parsed = parse_integer(value, event.target);
    } else if (key == "detail") {
      event.detail = std::string(value);
    }  // unknown keys are ignored: newer writers, older checkers
    if (!parsed)
      return std::nullopt;
  }
  if (!has_time || !has_kind)
    return std::nullopt;
  return event;
}

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

std::int64_t to_monotonic_ns(std::chrono::steady_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

Recorder::Recorder(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot open the history file " + path);
}

Recorder::~Recorder() {
  if (fd_ >= 0)
    ::close(fd_);
}

void Recorder::record(Event event) const {
  if (event.t == 0)
    event.t = monotonic_ns();
  event.pid = static_cast<int>(::getpid());
  event.tid = static_cast<int>(::syscall(SYS_gettid));
  const std::string line = event.to_line();
  // One write(2) per line: with O_APPEND the kernel appends it whole, so threads never interleave.
  const ssize_t written = ::write(fd_, line.data(), line.size());
  if (written != static_cast<ssize_t>(line.size()))
    std::abort();
}

std::vector<Event> read_history_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Only whole lines: a process killed in the middle of a write may leave a torn last line
  // (without its '\n'), whose numbers could be cut short.
  std::vector<Event> events;
  std::size_t begin = 0;
  for (std::size_t end; (end = content.find('\n', begin)) != std::string::npos; begin = end + 1)
    if (auto event = parse_event(std::string_view(content).substr(begin, end - begin)))
      events.push_back(std::move(*event));
  return events;
}

std::vector<Event> read_history(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".events")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Event> events;
  for (const auto& file : files) {
    auto more = read_history_file(file.string());
    events.insert(events.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.t < b.t; });
  return events;
}

}  // namespace leasehold::testing
