#include "leasehold/log.hpp"

#include <iostream>
#include <memory>
#include <mutex>
#include <string>

namespace leasehold {
namespace {

std::mutex& handler_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::shared_ptr<const LogHandler>& current_handler() {
  static std::shared_ptr<const LogHandler> handler;
  return handler;
}

void default_handler(LogLevel level, std::string_view message) {
  if (level < LogLevel::warning)
    return;
  std::string line = "leasehold ";
  line.append(to_string(level)).append(": ").append(message).append("\n");
  std::cerr << line << std::flush;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "?";
}

void set_log_handler(LogHandler handler) {
  std::lock_guard lock(handler_mutex());
  current_handler() = handler ? std::make_shared<const LogHandler>(std::move(handler)) : nullptr;
}

void log(LogLevel level, std::string_view message) noexcept {
  std::shared_ptr<const LogHandler> handler;
  {
    std::lock_guard lock(handler_mutex());
    handler = current_handler();
  }
  try {
    if (handler)
      (*handler)(level, message);
    else
      default_handler(level, message);
  } catch (...) {
  }
}

}  // namespace leasehold
