// Error codes and the exception type of leasehold.
//
// Outcomes such as "busy" or "lease lost" are values, never errors. Errors are failures to reach
// Redis, to be understood by it, or to use the library correctly. The async API reports them as
// std::error_code in leasehold's own category; the sync API throws leasehold::Error (a
// std::system_error) whose what() adds the details (the server's own message, the URL, ...).
#pragma once

#include <string>
#include <system_error>

namespace leasehold {

enum class errc {
  // Usage errors, detected before anything is sent.
  invalid_url = 1,
  invalid_argument,
  called_from_io_thread,
  // Connection and transport failures.
  connect_failed,
  connect_timeout,
  command_timeout,
  connection_lost,
  closed,
  protocol_error,
  // The server refused the connection's setup.
  auth_failed,
  select_failed,
  // The server answered a command with an error.
  server_error,
  wrong_type,
  out_of_memory,
  no_permission,
  no_script,
  server_busy,
  server_loading,
  read_only_replica,
  unexpected_reply,
  // Outcomes asked for as values that were not there.
  lease_lost,
  lock_busy,
  // Redis Cluster.
  cross_slot,      // usage: a query's keys are in different hash slots (refused before sending)
  not_replicated,  // an acquire was not confirmed on enough replicas (the WAIT option); released
  // The TLS handshake failed (an untrusted or misnamed certificate, a server without TLS, a
  // client certificate the server refused): fatal, like a refused password.
  tls_failed,
};

const std::error_category& category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

// The exception of the sync API. code() is one of errc (or a system error such as
// connection_refused); what() is a sentence that says what failed and what to do.
class Error : public std::system_error {
 public:
  Error(std::error_code code, const std::string& detail) : std::system_error(code, detail) {}
  explicit Error(std::error_code code) : std::system_error(code) {}
};

// Throws Error(code, detail) unless code is empty; detail may be empty.
void throw_if(std::error_code code, const std::string& detail = {});

}  // namespace leasehold

template <>
struct std::is_error_code_enum<leasehold::errc> : std::true_type {};
