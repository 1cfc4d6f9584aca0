// The setup of a new connection, without any I/O: the commands it sends (AUTH, SELECT,
// CLIENT SETNAME, PING, TIME, HELLO, in one write) and the verdict on their replies. The
// connection's loop writes request(), feeds what it reads to a codec::ReplyReader and hands the
// reader to on_bytes() until that gives the verdict.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "codec.hpp"
#include "failure.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/url.hpp"

namespace leasehold::detail {

class Handshake {
 public:
  // `client_name`: empty for no CLIENT SETNAME. `expect_master`: the server must say with ROLE
  // that it is a master (a sentinel named it; a refused ROLE is trusted). `sent`: when request()
  // goes out, by the wall clock.
  Handshake(RedisUrl url, std::string_view client_name, bool expect_master = false,
            std::chrono::system_clock::time_point sent = std::chrono::system_clock::now());

  std::string_view request() const noexcept { return request_; }

  // Takes the replies `reader` holds: nothing until every step's reply came, then the verdict
  // (no error: the connection is ready for calls).
  // `now`: the wall clock as the bytes arrived.
  std::optional<Failure> on_bytes(
      codec::ReplyReader& reader,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

  // After a verdict without error: the server's wall clock minus this host's, from its TIME and
  // half the round trip; nothing when the server refused TIME (an ACL may).
  std::optional<std::chrono::nanoseconds> server_clock_offset() const noexcept { return offset_; }

  // After a verdict without error: the server's version as HELLO gave it ("7.0.15"), and its
  // major number; nothing when the server refused HELLO (a proxy, an ACL).
  const std::optional<std::string>& server_version() const noexcept { return version_; }
  std::optional<int> server_major_version() const noexcept;

  // The failure when the connection broke while logging in with `error`. Under TLS, `tls_why` is
  // what the TLS layer said failed (empty if it was not TLS), and `client_certificate` whether
  // the client presents one.
  Failure broken(std::error_code error, bool tls, const std::string& tls_why,
                 bool client_certificate) const;

 private:
  enum class Step { auth, select, set_name, ping, time, hello, role };

  // The verdict on replies_, one per step; `more` when bytes followed them.
  Failure judge(bool more) const;
  Failure refused(Step step, const Reply& reply) const;

  const RedisUrl url_;
  std::vector<Step> steps_;
  std::string request_;
  std::vector<Reply> replies_;
  std::chrono::system_clock::time_point sent_;
  std::optional<std::chrono::nanoseconds> offset_;
  std::optional<std::string> version_;
};

}  // namespace leasehold::detail
