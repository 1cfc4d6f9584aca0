#include "leasehold/reply.hpp"

#include "leasehold/error.hpp"

namespace leasehold {

std::error_code classify_error_reply(std::string_view message) noexcept {
  const auto prefix = message.substr(0, message.find(' '));
  if (prefix == "WRONGTYPE")
    return errc::wrong_type;
  if (prefix == "OOM")
    return errc::out_of_memory;
  if (prefix == "NOPERM")
    return errc::no_permission;
  if (prefix == "NOSCRIPT")
    return errc::no_script;
  if (prefix == "BUSY")
    return errc::server_busy;
  if (prefix == "LOADING")
    return errc::server_loading;
  if (prefix == "READONLY")
    return errc::read_only_replica;
  if (prefix == "WRONGPASS" || prefix == "NOAUTH")
    return errc::auth_failed;
  if (prefix == "NOTREPLICATED")  // leasehold's own, for ClientOptions::replica_acks
    return errc::not_replicated;
  // Errors raised inside a script carry the original error after the script's location, e.g.
  // "ERR Error running script ...: @user_script:1: WRONGTYPE Operation against a key ...".
  if (message.find("WRONGTYPE") != std::string_view::npos)
    return errc::wrong_type;
  if (message.find("OOM ") != std::string_view::npos)
    return errc::out_of_memory;
  if (message.find("NOPERM") != std::string_view::npos)
    return errc::no_permission;
  // Redis 7.0 words an ACL refusal inside a script without NOPERM: "ERR The user executing the
  // script can't run this command or subcommand script: ...".
  if (message.find("The user executing the script can't") != std::string_view::npos)
    return errc::no_permission;
  return errc::server_error;
}

std::string to_string(const Reply& reply) {
  switch (reply.type) {
    case Reply::Type::nil:
      return "(nil)";
    case Reply::Type::string:
      return "\"" + reply.str + "\"";
    case Reply::Type::status:
      return reply.str;
    case Reply::Type::error:
      return "(error) " + reply.str;
    case Reply::Type::integer:
      return "(integer) " + std::to_string(reply.integer);
    case Reply::Type::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < reply.elements.size(); ++i) {
        if (i != 0)
          out += ", ";
        out += to_string(reply.elements[i]);
      }
      return out + "]";
    }
  }
  return "?";
}

}  // namespace leasehold
