// The library's log messages (set_log_handler), captured for the duration of a test.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/log.hpp"

namespace leasehold::testing {

struct CapturedLog {
  CapturedLog() {
    set_log_handler([this](LogLevel level, std::string_view message) {
      std::lock_guard lock(mutex);
      lines.emplace_back(std::string(to_string(level)) + ": " + std::string(message));
    });
  }
  ~CapturedLog() { set_log_handler({}); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  // How many messages so far contain `needle`.
  std::size_t count(std::string_view needle) {
    std::lock_guard lock(mutex);
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find(needle) != std::string::npos;
    });
  }
  // Every message so far, one a line (for a failure's message).
  std::string text() {
    std::lock_guard lock(mutex);
    std::string all;
    for (const std::string& line : lines)
      all += line + "\n";
    return all;
  }

  std::mutex mutex;
  std::vector<std::string> lines;  // "<level>: <message>"
};

}  // namespace leasehold::testing
