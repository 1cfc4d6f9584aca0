// The logging hook: where leasehold reports what it does not return to a caller (a cron job's
// failed run, a skipped tick). By default, warnings and errors go to stderr, one line each.
#pragma once

#include <functional>
#include <string_view>

namespace leasehold {

enum class LogLevel { debug, info, warning, error };

using LogHandler = std::function<void(LogLevel, std::string_view message)>;

// Replaces the handler for the whole process; an empty handler restores the default. Thread-safe.
void set_log_handler(LogHandler handler);

// Sends one message to the current handler. Thread-safe; a throwing handler is ignored.
void log(LogLevel level, std::string_view message) noexcept;

std::string_view to_string(LogLevel level) noexcept;

}  // namespace leasehold
