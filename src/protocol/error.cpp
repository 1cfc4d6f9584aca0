#include "leasehold/error.hpp"

namespace leasehold {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "leasehold"; }

  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_url:
        return "The Redis URL is malformed; use redis://[user[:password]@]host[:port][/db] or "
               "unix:///path/to/socket[?db=N].";
      case errc::invalid_argument:
        return "An argument is out of range or malformed.";
      case errc::called_from_io_thread:
        return "A blocking call was made from the client's own I/O thread, where it would wait "
               "forever; use the async_ form there.";
      case errc::connect_failed:
        return "Could not connect to Redis; check that the server runs and the URL is right.";
      case errc::connect_timeout:
        return "Connecting to Redis took longer than the connect timeout; check the address and "
               "the network, or raise the timeout.";
      case errc::command_timeout:
        return "Redis did not answer within the command timeout; the server may be overloaded, "
               "paused or unreachable.";
      case errc::connection_lost:
        return "The connection to Redis was lost after the command was sent; it may or may not "
               "have been executed.";
      case errc::closed:
        return "The client was closed; no more commands can run on it.";
      case errc::protocol_error:
        return "Redis sent bytes that are not valid RESP; the peer may not be a Redis server.";
      case errc::auth_failed:
        return "Redis refused the credentials; check the user and password in the URL.";
      case errc::select_failed:
        return "Redis refused to select the database named in the URL; check the database number.";
      case errc::server_error:
        return "Redis answered the command with an error.";
      case errc::wrong_type:
        return "A key used by leasehold already holds a value of another type; remove it or use "
               "another prefix.";
      case errc::out_of_memory:
        return "Redis is out of memory (maxmemory reached) and refuses writes; free memory or "
               "raise maxmemory.";
      case errc::no_permission:
        return "The Redis user lacks a permission the command needs; grant the command or key "
               "pattern in its ACL.";
      case errc::no_script:
        return "Redis no longer has the Lua script cached (NOSCRIPT).";
      case errc::server_busy:
        return "Redis is busy running a long script (BUSY); retry later.";
      case errc::server_loading:
        return "Redis is still loading its dataset (LOADING); retry in a moment.";
      case errc::read_only_replica:
        return "The server is a read-only replica; connect to the primary.";
      case errc::unexpected_reply:
        return "Redis answered with a reply of an unexpected type.";
      case errc::lock_busy:
        return "Someone else held the lock at every attempt; the work did not run.";
      case errc::cross_slot:
        return "The query's keys are in different Redis Cluster hash slots, so no single node can "
               "run it; give its keys a common {hash tag}.";
      case errc::not_replicated:
        return "The lease was not confirmed on enough replicas (too few acknowledged it within "
               "the WAIT timeout, or the server refused WAIT), so an acquire was released; check "
               "the replicas' health and the user's permission for WAIT, or lower the number "
               "asked for.";
      case errc::tls_failed:
        return "The TLS handshake with Redis failed; check the CA file, the server's certificate "
               "and name, and the client certificate the server may require.";
      case errc::hold_budget_exceeded:
        return "The lease was held for its whole hold budget (max_hold): it is no longer "
               "extended, and the work was asked to stop.";
      case errc::lease_lost:
        return "The lease was lost while the work ran: it expired or was taken over, or it "
               "could not be extended before its deadline.";
    }
    return "Unknown leasehold error.";
  }
};

// Which codes each condition holds: the one place that says it.
bool is_of(errc code, condition kind) noexcept {
  switch (kind) {
    case condition::fatal:
      return code == errc::auth_failed || code == errc::select_failed || code == errc::tls_failed;
    case condition::transient:
      return code == errc::connect_failed || code == errc::connect_timeout ||
             code == errc::command_timeout || code == errc::connection_lost ||
             code == errc::server_busy || code == errc::server_loading || code == errc::no_script;
    case condition::outcome_unknown:
      return code == errc::command_timeout || code == errc::connection_lost;
    case condition::usage:
      return code == errc::invalid_url || code == errc::invalid_argument ||
             code == errc::called_from_io_thread || code == errc::cross_slot;
  }
  return false;
}

class ConditionCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "leasehold.condition"; }

  std::string message(int value) const override {
    switch (static_cast<condition>(value)) {
      case condition::fatal:
        return "Redis refused the connection's setup (credentials, database or TLS); retrying "
               "with the same settings cannot help.";
      case condition::transient:
        return "Redis could not be reached, stopped answering or asked to be called later; the "
               "same call may succeed later.";
      case condition::outcome_unknown:
        return "The call was sent and no answer came; it may or may not have run.";
      case condition::usage:
        return "The library was used wrongly; nothing was sent.";
    }
    return "Unknown leasehold condition.";
  }

  bool equivalent(const std::error_code& code, int value) const noexcept override {
    return code.category() == category() &&
           is_of(static_cast<errc>(code.value()), static_cast<condition>(value));
  }
};

}  // namespace

// The categories are never destroyed: a client's I/O thread may still compare codes while a
// program that calls exit() destroys its statics (the command does, with its client closing).
const std::error_category& category() noexcept {
  static const Category* const instance = new Category;
  return *instance;
}

const std::error_category& condition_category() noexcept {
  static const ConditionCategory* const instance = new ConditionCategory;
  return *instance;
}

void throw_if(std::error_code code, const std::string& detail) {
  if (!code)
    return;
  if (detail.empty())
    throw Error(code);
  throw Error(code, detail);
}

}  // namespace leasehold
