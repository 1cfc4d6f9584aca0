// A Redis reply (RESP2) as a plain value.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace leasehold {

struct Reply {
  enum class Type : std::uint8_t { nil, string, status, error, integer, array };

  Type type = Type::nil;
  std::string str;  // string, status and error replies
  long long integer = 0;
  std::vector<Reply> elements;  // array replies

  static Reply make_nil() { return {}; }
  static Reply make_string(std::string s) { return {Type::string, std::move(s), 0, {}}; }
  static Reply make_status(std::string s) { return {Type::status, std::move(s), 0, {}}; }
  static Reply make_error(std::string s) { return {Type::error, std::move(s), 0, {}}; }
  static Reply make_integer(long long v) { return {Type::integer, {}, v, {}}; }
  static Reply make_array(std::vector<Reply> e) { return {Type::array, {}, 0, std::move(e)}; }

  bool is_error() const noexcept { return type == Type::error; }
  bool is_nil() const noexcept { return type == Type::nil; }

  friend bool operator==(const Reply&, const Reply&) = default;
};

// The error code for an error reply, chosen by its prefix (WRONGTYPE, OOM, NOPERM, NOSCRIPT, ...);
// errc::server_error when the prefix is not one leasehold distinguishes. BUSY and LOADING are of
// condition::transient (error.hpp), WRONGPASS and NOAUTH of condition::fatal.
std::error_code classify_error_reply(std::string_view message) noexcept;

// A short, printable rendering of a reply for messages and test output.
std::string to_string(const Reply& reply);

inline std::ostream& operator<<(std::ostream& out, const Reply& reply) {
  return out << to_string(reply);
}

}  // namespace leasehold
