// Error codes, the conditions they fall under, and the exception type of leasehold.
//
// Outcomes such as "busy" or "lease lost" are values, never errors. Errors are failures to reach
// Redis, to be understood by it, or to use the library correctly. The async API reports them as
// std::error_code in leasehold's own category, and the details in a Diagnostics for a caller who
// passes one; the sync API throws leasehold::Error (a std::system_error) whose what() adds the
// details (the server's own message, the URL, ...).
//
// `errc` says exactly what failed; `condition` says what kind of failure it is, for code that
// decides what to do next (give up, try again later, clean up) without listing codes:
//   if (ec == leasehold::condition::transient) retry_later();
#pragma once

#include <string>
#include <system_error>
#include <utility>

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
  // A lease held for its whole hold budget (max_hold): its extensions stopped, and the work was
  // asked to stop. The cause of a loss, as lease_lost is its outcome.
  hold_budget_exceeded,
};

const std::error_category& category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

// Kinds of errors, compared with a code as `ec == condition::fatal` (std::error_condition). A code
// may be of several kinds (command_timeout is transient, and the outcome of its call unknown) or
// of none (wrong_type, no_permission, server_error, ... : the server refused this call). Codes of
// other categories are of none.
enum class condition {
  // Redis refused the connection's setup: the credentials (auth_failed), the database
  // (select_failed) or the TLS handshake (tls_failed). Retrying with the same settings cannot
  // help; a client whose setup was refused stops reconnecting and fails every call with it.
  fatal = 1,
  // Redis could not be reached or stopped answering (connect_failed, connect_timeout,
  // command_timeout, connection_lost), or asked to be called again later (server_busy,
  // server_loading), or lost a script a call needed and the call was not run (no_script). The
  // client reconnects by itself: the same call may succeed if made again later. A call that was
  // sent may have run, though: see outcome_unknown.
  transient,
  // The call was sent and its answer never came (command_timeout, connection_lost): it may or
  // may not have run. An acquire that reports it may hold a lease nobody knows of; the lock
  // queries release it themselves (on_unknown_outcome(), docs/connection.md).
  outcome_unknown,
  // The library was used wrongly (invalid_url, invalid_argument, called_from_io_thread,
  // cross_slot): nothing was sent, and the same call fails the same way every time.
  usage,
};

const std::error_category& condition_category() noexcept;

inline std::error_condition make_error_condition(condition c) noexcept {
  return {static_cast<int>(c), condition_category()};
}

// The exception of the sync API. code() is one of errc (or a system error such as
// connection_refused); what() is a sentence that says what failed and what to do.
class Error : public std::system_error {
 public:
  Error(std::error_code code, const std::string& detail) : std::system_error(code, detail) {}
  explicit Error(std::error_code code) : std::system_error(code) {}
};

// What an async call's failure says beyond its code: the detail that the sync API's Error adds to
// what() (the server's own message for an error reply, the address that could not be reached,
// "the client was closed", ...). Hand one to an async call that takes it; the call clears it when
// it starts and, if it fails, fills it before its handler runs. It must outlive the call, and is
// neither read nor handed to another call until the handler ran. throw_if(ec, d.message()) throws
// what the sync call would have thrown.
//
//   leasehold::Diagnostics diagnostics;
//   std::error_code ec;
//   auto reply = co_await redis.async_process(query, diagnostics,
//                                             asio::redirect_error(asio::use_awaitable, ec));
//   if (ec) log(ec.message() + " (" + diagnostics.message() + ")");
class Diagnostics {
 public:
  // The detail of the failure; empty after a success, or when the code says everything.
  const std::string& message() const noexcept { return message_; }
  void clear() noexcept { message_.clear(); }
  // The library records the detail of a failed call here.
  void set_message(std::string message) noexcept { message_ = std::move(message); }

 private:
  std::string message_;
};

// Throws Error(code, detail) unless code is empty; detail may be empty.
void throw_if(std::error_code code, const std::string& detail = {});

}  // namespace leasehold

template <>
struct std::is_error_code_enum<leasehold::errc> : std::true_type {};

template <>
struct std::is_error_condition_enum<leasehold::condition> : std::true_type {};
