#include "handshake.hpp"

#include <algorithm>
#include <asio/error.hpp>
#include <charconv>

#include "leasehold/error.hpp"
#include "leasehold/request.hpp"

namespace leasehold::detail {

Handshake::Handshake(RedisUrl url, std::string_view client_name, bool expect_master,
                     std::chrono::system_clock::time_point sent)
    : url_(std::move(url)), sent_(sent) {
  if (url_.has_password) {
    steps_.push_back(Step::auth);
    request_ += url_.user.empty() ? Request::command({"AUTH", url_.password}).bytes()
                                  : Request::command({"AUTH", url_.user, url_.password}).bytes();
  }
  if (url_.db != 0) {
    steps_.push_back(Step::select);
    request_ += Request::command({"SELECT", std::to_string(url_.db)}).bytes();
  }
  if (!client_name.empty()) {
    steps_.push_back(Step::set_name);
    request_ += Request::command({"CLIENT", "SETNAME", client_name}).bytes();
  }
  // PING tells "needs a password" (NOAUTH) and "still loading" apart before any call is sent.
  steps_.push_back(Step::ping);
  request_ += Request::command({"PING"}).bytes();
  // The server's clock, for the holder identity's "since when" (clock.hpp).
  steps_.push_back(Step::time);
  request_ += Request::command({"TIME"}).bytes();
  // The server's version, which says whether it knows what Redis 7 added (SET ... NX ... GET,
  // sharded pub/sub). "HELLO 2" keeps the protocol as it is; Redis 6.0 wants the number.
  steps_.push_back(Step::hello);
  request_ += Request::command({"HELLO", "2"}).bytes();
  if (expect_master) {
    steps_.push_back(Step::role);
    request_ += Request::command({"ROLE"}).bytes();
  }
}

namespace {

// ROLE's first element ("master", "slave", "sentinel"), or the reply itself when it is not ROLE's.
std::string role_of(const Reply& reply) {
  if (reply.type != Reply::Type::array || reply.elements.empty() ||
      reply.elements.front().type != Reply::Type::string)
    return to_string(reply);
  return reply.elements.front().str;
}

// The "version" field of HELLO's reply (a flat list of names and values); nothing if it has none.
std::optional<std::string> version_of(const Reply& reply) {
  if (reply.type != Reply::Type::array)
    return std::nullopt;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
    if (reply.elements[i].str == "version" && reply.elements[i + 1].type == Reply::Type::string)
      return reply.elements[i + 1].str;
  return std::nullopt;
}

// TIME's reply [seconds, microseconds] as a time point; nothing for any other reply.
std::optional<std::chrono::system_clock::time_point> time_of(const Reply& reply) {
  if (reply.type != Reply::Type::array || reply.elements.size() != 2)
    return std::nullopt;
  // A moment the system clock can hold (it ends in 2262): seconds of some 272 years, and a
  // fraction of one second. Anything else is not a clock's reading.
  constexpr long long kMaxSeconds = 1LL << 33;
  try {
    const long long seconds = std::stoll(reply.elements[0].str);
    const long long micros = std::stoll(reply.elements[1].str);
    if (seconds < 0 || seconds > kMaxSeconds || micros < 0 || micros >= 1'000'000)
      return std::nullopt;
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(seconds) + std::chrono::microseconds(micros)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<Failure> Handshake::on_bytes(codec::ReplyReader& reader,
                                           std::chrono::system_clock::time_point now) {
  std::error_code parse_error;
  while (replies_.size() < steps_.size()) {
    Reply* reply = reader.next(parse_error);
    if (!reply)
      break;
    replies_.push_back(std::move(*reply));
  }
  if (parse_error) {
    return Failure{make_error_code(errc::protocol_error),
                   "the server at " + url_.address() +
                       " does not speak the Redis protocol: " + reader.error_text()};
  }
  if (replies_.size() < steps_.size())
    return std::nullopt;
  Failure verdict = judge(!reader.idle());
  if (!verdict) {
    const auto time_step = std::find(steps_.begin(), steps_.end(), Step::time) - steps_.begin();
    if (const auto server = time_of(replies_[static_cast<std::size_t>(time_step)]))
      offset_ = *server - (sent_ + (now - sent_) / 2);
    const auto hello_step = std::find(steps_.begin(), steps_.end(), Step::hello) - steps_.begin();
    version_ = version_of(replies_[static_cast<std::size_t>(hello_step)]);
  }
  return verdict;
}

Failure Handshake::judge(bool more) const {
  // Nothing else was asked: bytes after the setup's replies (a greeting, a reply too many) would
  // be taken for the reply to the first call.
  if (more) {
    return {make_error_code(errc::protocol_error),
            "the server at " + url_.address() +
                " sent more than the replies to the connection's setup; it may not be a Redis "
                "server"};
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Reply& reply = replies_[i];
    if (reply.is_error()) {
      if (Failure failure = refused(steps_[i], reply))
        return failure;
      continue;
    }
    // Each step has one success reply. Any other means that unsolicited bytes (a greeting)
    // shifted the replies, and what is still to come would be taken for the first calls'.
    if (steps_[i] == Step::role) {
      const std::string role = role_of(reply);
      if (role != "master") {
        return {make_error_code(errc::connect_failed),
                "Redis at " + url_.address() + ", which the sentinels named the master, is a " +
                    role + " (a failover may be under way); asking the sentinels again"};
      }
      continue;
    }
    if (steps_[i] == Step::hello) {
      if (reply.type != Reply::Type::array) {
        return {make_error_code(errc::protocol_error),
                "the server at " + url_.address() + " answered HELLO with " + to_string(reply) +
                    "; it may not be a Redis server"};
      }
      continue;
    }
    if (steps_[i] == Step::time) {
      if (!time_of(reply)) {
        return {make_error_code(errc::protocol_error),
                "the server at " + url_.address() + " answered TIME with " + to_string(reply) +
                    "; it may not be a Redis server"};
      }
      continue;
    }
    const std::string_view expected = steps_[i] == Step::ping ? "PONG" : "OK";
    if (reply.type != Reply::Type::status || reply.str != expected) {
      return {make_error_code(errc::protocol_error),
              "the server at " + url_.address() + " answered the connection's setup with " +
                  to_string(reply) + " where Redis answers " + std::string(expected) +
                  "; it may not be a Redis server"};
    }
  }
  return {};
}

Failure Handshake::refused(Step step, const Reply& reply) const {
  switch (step) {
    case Step::auth:
      return {make_error_code(errc::auth_failed),
              "Redis at " + url_.address() + " refused to log in " +
                  (url_.user.empty() ? "with the password" : "as user '" + url_.user + "'") +
                  " from the URL: " + reply.str};
    case Step::select:
      return {make_error_code(errc::select_failed), "Redis at " + url_.address() +
                                                        " refused SELECT " +
                                                        std::to_string(url_.db) + ": " + reply.str};
    case Step::set_name:
      return {};  // a name is a courtesy; an ACL may forbid CLIENT SETNAME
    case Step::ping:
      if (reply.str.starts_with("NOAUTH")) {
        return {make_error_code(errc::auth_failed),
                "Redis at " + url_.address() +
                    " requires a password, and the URL gives none: " + reply.str};
      }
      if (reply.str.starts_with("LOADING")) {
        return {make_error_code(errc::server_loading),
                "Redis at " + url_.address() + " is loading its dataset"};
      }
      return {};  // e.g. NOPERM for PING: calls will say what they lack
    case Step::time:
      return {};  // an ACL may forbid TIME: holders are then stamped by this host's clock
    case Step::hello:
      return {};  // a proxy may not know HELLO, an ACL may forbid it: the version is unknown
    case Step::role:
      return {};  // an ACL may forbid ROLE: the sentinels' word is taken
  }
  return {};
}

std::optional<int> Handshake::server_major_version() const noexcept {
  if (!version_)
    return std::nullopt;
  int major = 0;
  const char* const end = version_->data() + version_->size();
  const auto [next, error] = std::from_chars(version_->data(), end, major);
  if (error != std::errc() || next == version_->data())
    return std::nullopt;
  return major;
}

Failure Handshake::broken(std::error_code error, bool tls, const std::string& tls_why,
                          bool client_certificate) const {
  // Under TLS 1.3 the server checks the client's certificate after the client's handshake is
  // done: its refusal arrives as the first read.
  if (tls && !tls_why.empty()) {
    return {make_error_code(errc::tls_failed),
            "Redis at " + url_.address() + " ended the TLS session while logging in: " + tls_why +
                " (does it want a client certificate? see ClientOptions::tls)"};
  }
  // A TLS port closes a connection whose first bytes are not a TLS hello. Under TLS 1.3, a
  // server that wants a client certificate closes the connection after the handshake, and its
  // alert saying why may be lost to the reset.
  const bool closed = error == asio::error::eof || error == asio::error::connection_reset;
  std::string hint;
  if (closed && !tls && url_.transport == RedisUrl::Transport::tcp)
    hint = "; if the server takes TLS on this port, use rediss://";
  else if (closed && tls && !client_certificate)
    hint =
        "; if the server wants a client certificate (Redis' tls-auth-clients, on by default), "
        "give one in ClientOptions::tls";
  return {make_error_code(errc::connect_failed),
          "the connection to Redis at " + url_.address() +
              " failed while logging in: " + error.message() + hint};
}

}  // namespace leasehold::detail
