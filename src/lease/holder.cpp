#include "leasehold/holder.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <mutex>
#include <vector>

#include "leasehold/clock.hpp"

namespace leasehold {
namespace {

// The process's identity: fixed but for the label, which the application may set.
struct ProcessHolder {
  std::mutex mutex;
  std::string label = program_invocation_short_name;
  std::atomic<bool> on{true};
  // Bumped at each set_holder_label(): a thread's cached prefix is rebuilt when it moved.
  std::atomic<std::uint64_t> generation{1};
  const std::string host = [] {
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
      return std::string("unknown");
    return std::string(name);
  }();
};

ProcessHolder& process_holder() {
  static ProcessHolder holder;
  static const bool fork_handled = [] {
    // A forked child has another pid: its threads' cached prefixes are stale.
    ::pthread_atfork(nullptr, nullptr, [] { ++process_holder().generation; });
    return true;
  }();
  (void)fork_handled;
  return holder;
}

bool kept_as_is(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/' || c == '@' || c == '+' || c == '=' || c == ',';
}

// A field, cut to kMaxField bytes (a label is a name, not a log line) and %-escaped.
constexpr std::size_t kMaxField = 64;
void append_escaped(std::string& out, std::string_view field) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : field.substr(0, kMaxField)) {
    const auto byte = static_cast<unsigned char>(c);
    if (kept_as_is(byte)) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

std::optional<std::string> unescaped(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '%') {
      out += field[i];
      continue;
    }
    if (i + 2 >= field.size())
      return std::nullopt;
    const int high = hex_value(field[i + 1]);
    const int low = hex_value(field[i + 2]);
    if (high < 0 || low < 0)
      return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

template <class Number>
std::optional<Number> number(std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

}  // namespace

void set_holder_label(std::string label) {
  ProcessHolder& holder = process_holder();
  std::lock_guard lock(holder.mutex);
  holder.label = std::move(label);
  ++holder.generation;
}

void set_holder_identity(bool on) {
  process_holder().on = on;
}

StoredLease read_stored_lease(std::string_view stored) {
  stored = stored.substr(0, stored.find(':'));  // a waiter's mark follows a ':'
  const std::size_t end_of_id = stored.find(';');
  StoredLease lease{std::string(stored.substr(0, end_of_id)), std::nullopt, std::string(stored)};
  if (end_of_id == std::string_view::npos)
    return lease;
  std::vector<std::string_view> fields;
  for (std::size_t at = end_of_id + 1;;) {
    const std::size_t next = stored.find(';', at);
    fields.push_back(stored.substr(at, next == std::string_view::npos ? next : next - at));
    if (next == std::string_view::npos)
      break;
    at = next + 1;
  }
  if (fields.size() != 4)
    return lease;  // not an identity this version writes: the id alone
  const auto host = unescaped(fields[0]);
  const auto pid = number<std::int64_t>(fields[1]);
  const auto label = unescaped(fields[2]);
  const auto ms = number<std::int64_t>(fields[3]);
  // A moment the system clock cannot hold (some 292 years from 1970, in nanoseconds) is not one
  // this version wrote.
  constexpr std::int64_t kMaxMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::duration::max())
                                      .count();
  if (!host || !pid || !label || !ms || *ms > kMaxMs || *ms < -kMaxMs)
    return lease;
  lease.holder = Holder{*host, *pid, *label,
                        std::chrono::system_clock::time_point(std::chrono::milliseconds(*ms))};
  return lease;
}

namespace detail {

std::string holder_label() {
  ProcessHolder& holder = process_holder();
  std::lock_guard lock(holder.mutex);
  return holder.label;
}

namespace {

// ";<host>;<pid>;<label>;", escaped: the part of a suffix that changes only with the label.
std::string suffix_prefix(ProcessHolder& holder, std::string_view label) {
  std::string prefix = ";";
  append_escaped(prefix, holder.host);
  prefix += ';';
  prefix += std::to_string(::getpid());
  prefix += ';';
  append_escaped(prefix, label);
  prefix += ';';
  return prefix;
}

}  // namespace

std::string holder_suffix(std::string_view label) {
  ProcessHolder& holder = process_holder();
  if (!holder.on.load(std::memory_order_relaxed))
    return {};
  std::string suffix;
  if (label.empty()) {
    // Every acquire builds one: the process's prefix is kept per thread, rebuilt after a new
    // label or a fork (the child's pid differs).
    thread_local std::uint64_t cached_generation = 0;
    thread_local std::string cached_prefix;
    const std::uint64_t generation = holder.generation.load(std::memory_order_acquire);
    if (generation != cached_generation) {
      std::lock_guard lock(holder.mutex);
      cached_prefix = suffix_prefix(holder, holder.label);
      cached_generation = generation;
    }
    suffix = cached_prefix;
  } else {
    suffix = suffix_prefix(holder, label);
  }
  // By the servers' clock (clock.hpp), so that holders on hosts with skewed clocks compare.
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(server_clock_now().time_since_epoch());
  char digits[24];
  const auto written = std::to_chars(digits, digits + sizeof digits, now.count());
  suffix.append(digits, written.ptr);
  return suffix;
}

}  // namespace detail
}  // namespace leasehold
