#include "leasehold/url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>

#include "leasehold/error.hpp"

#include "hex.hpp"

namespace leasehold {
namespace {

constexpr std::string_view kRedisScheme = "redis://";
constexpr std::string_view kUnixScheme = "unix://";
constexpr std::string_view kClusterScheme = "redis-cluster://";
constexpr std::string_view kTlsScheme = "rediss://";
constexpr std::string_view kTlsClusterScheme = "rediss-cluster://";
constexpr std::string_view kSentinelScheme = "redis-sentinel://";
constexpr std::string_view kTlsSentinelScheme = "rediss-sentinel://";
constexpr std::uint16_t kSentinelPort = 26379;

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size())
      return false;
    const int hi = detail::hex_value(in[i + 1]);
    const int lo = detail::hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

template <class Int>
bool parse_number(std::string_view text, Int& value) {
  if (text.empty())
    return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size();
}

struct Failure {
  std::string why;
};

// Splits "user:password@rest" into credentials and rest; fills url.user / url.password.
std::string_view take_credentials(std::string_view rest, RedisUrl& url) {
  const auto at = rest.rfind('@');
  if (at == std::string_view::npos)
    return rest;
  const std::string_view userinfo = rest.substr(0, at);
  const auto colon = userinfo.find(':');
  std::string_view user = userinfo.substr(0, colon);
  if (!percent_decode(user, url.user)) {
    // Without a ':' the userinfo is a password (see below).
    throw Failure{colon == std::string_view::npos ? "the password has a bad %-escape"
                                                  : "the user name has a bad %-escape"};
  }
  if (colon != std::string_view::npos) {
    if (!percent_decode(userinfo.substr(colon + 1), url.password))
      throw Failure{"the password has a bad %-escape"};
    url.has_password = true;
  } else if (!url.user.empty()) {
    // "redis://secret@host" is the common way to give a password alone.
    url.password = std::move(url.user);
    url.user.clear();
    url.has_password = true;
  }
  if (url.has_password && url.password.empty() && url.user.empty())
    throw Failure{"the password is empty"};
  return rest.substr(at + 1);
}

int parse_db(std::string_view text) {
  int db = 0;
  if (!parse_number(text, db) || db < 0)
    throw Failure{"the database must be a number >= 0"};
  return db;
}

// "host[:port]" or "[v6]:port" into host and port (the port stays as it is when not given).
void parse_host_port(std::string_view hostport, std::string& host, std::uint16_t& port_out) {
  std::string_view port;
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos)
      throw Failure{"the IPv6 address misses its closing ']'"};
    host = std::string(hostport.substr(1, close - 1));
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        throw Failure{"expected ':port' after the IPv6 address"};
      port = after.substr(1);
      if (port.empty())
        throw Failure{"the port is empty"};
    }
  } else {
    const auto colon = hostport.find(':');
    host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = hostport.substr(colon + 1);
      if (port.empty())
        throw Failure{"the port is empty"};
    }
  }
  if (host.empty())
    throw Failure{"the host is missing"};
  if (!port.empty()) {
    unsigned value = 0;
    if (!parse_number(port, value) || value == 0 || value > 65535)
      throw Failure{"the port must be a number from 1 to 65535"};
    port_out = static_cast<std::uint16_t>(value);
  }
}

// "host[:port],host[:port]..." into endpoints, each port `default_port` when not given.
std::vector<RedisUrl::Endpoint> parse_endpoints(std::string_view list, std::uint16_t default_port) {
  std::vector<RedisUrl::Endpoint> endpoints;
  for (;;) {
    const auto comma = list.find(',');
    RedisUrl::Endpoint endpoint;
    endpoint.port = default_port;
    parse_host_port(list.substr(0, comma), endpoint.host, endpoint.port);
    endpoints.push_back(std::move(endpoint));
    if (comma == std::string_view::npos)
      return endpoints;
    list = list.substr(comma + 1);
  }
}

// A duration parameter: N (milliseconds), Nms or Ns.
std::chrono::milliseconds parse_duration(std::string_view key, std::string_view text) {
  long long scale = 1;
  if (text.ends_with("ms")) {
    text.remove_suffix(2);
  } else if (text.ends_with("s")) {
    text.remove_suffix(1);
    scale = 1000;
  }
  long long value = 0;
  if (!parse_number(text, value) || value <= 0 || value > 3'600'000 / scale)
    throw Failure{std::string(key) +
                  " must be a positive duration of at most an hour, as in 100ms"};
  return std::chrono::milliseconds(value * scale);
}

// The query string: the parameters every URL takes (replica_acks, replica_ack_timeout,
// safe_failover, compat) and those of its scheme (a unix socket's db, a Sentinel URL's
// sentinel_user and sentinel_password).
void parse_query(std::string_view query, RedisUrl& url) {
  const bool sentinel = url.transport == RedisUrl::Transport::sentinel;
  const bool unix_socket = url.transport == RedisUrl::Transport::unix_socket;
  for (;;) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto equals = pair.find('=');
    const std::string_view key = pair.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
    if (key == "replica_acks") {
      int acks = 0;
      if (!parse_number(value, acks) || acks < 0)
        throw Failure{"replica_acks must be a number >= 0 (0: off)"};
      url.replica_acks = acks;
    } else if (key == "replica_ack_timeout") {
      url.replica_ack_timeout = parse_duration(key, value);
    } else if (key == "safe_failover") {
      if (value != "1" && value != "0")
        throw Failure{"safe_failover must be 1 (on) or 0 (off), got '" + std::string(value) + "'"};
      url.safe_failover = value == "1";
    } else if (key == "compat") {
      if (value == "redis6")
        url.compat = RedisUrl::Compat::redis6;
      else if (value == "auto")
        url.compat = RedisUrl::Compat::automatic;
      else
        throw Failure{
            "compat must be redis6 (send only what Redis 6 knows) or auto (by the "
            "server's version), got '" +
            std::string(value) + "'"};
    } else if (unix_socket && key == "db") {
      url.db = parse_db(value);
    } else if (sentinel && key == "sentinel_user") {
      if (!percent_decode(value, url.sentinel_user))
        throw Failure{"sentinel_user has a bad %-escape"};
    } else if (sentinel && key == "sentinel_password") {
      if (!percent_decode(value, url.sentinel_password))
        throw Failure{"sentinel_password has a bad %-escape"};
      if (url.sentinel_password.empty())
        throw Failure{"sentinel_password is empty"};
      url.has_sentinel_password = true;
    } else {
      std::string takes = sentinel      ? "sentinel_user, sentinel_password, "
                          : unix_socket ? "db, "
                                        : "";
      std::string hint = url.transport == RedisUrl::Transport::cluster
                             ? " (Redis Cluster has only database 0)"
                         : unix_socket || sentinel ? ""
                                                   : " (the database is /N)";
      if (url.tls)
        hint += "; certificates are set in ClientOptions::tls";
      throw Failure{"unknown query parameter '" + std::string(key) + "'; the URL takes " + takes +
                    "replica_acks, replica_ack_timeout, safe_failover and compat" + hint};
    }
    if (amp == std::string_view::npos)
      return;
    query = query.substr(amp + 1);
  }
}

// Splits off and parses the query string, if any: what is left.
std::string_view take_query(std::string_view rest, RedisUrl& url) {
  const auto q = rest.find('?');
  if (q == std::string_view::npos)
    return rest;
  parse_query(rest.substr(q + 1), url);
  return rest.substr(0, q);
}

// The database number after the '/' at `slash`, if one is given.
std::optional<int> db_after(std::string_view rest, std::size_t slash) {
  if (slash == std::string_view::npos || slash + 1 == rest.size())
    return std::nullopt;
  return parse_db(rest.substr(slash + 1));
}

void parse_tcp(std::string_view rest, RedisUrl& url) {
  url.transport = RedisUrl::Transport::tcp;
  rest = take_credentials(take_query(rest, url), url);
  const auto slash = rest.find('/');
  if (const std::optional<int> db = db_after(rest, slash))
    url.db = *db;
  parse_host_port(rest.substr(0, slash), url.host, url.port);
}

void parse_cluster(std::string_view rest, RedisUrl& url) {
  url.transport = RedisUrl::Transport::cluster;
  rest = take_credentials(take_query(rest, url), url);
  const auto slash = rest.find('/');
  if (const std::optional<int> db = db_after(rest, slash); db && *db != 0)
    throw Failure{"Redis Cluster has only database 0"};
  url.seeds = parse_endpoints(rest.substr(0, slash), 6379);
  url.host = url.seeds.front().host;
  url.port = url.seeds.front().port;
}

void parse_sentinel(std::string_view rest, RedisUrl& url) {
  url.transport = RedisUrl::Transport::sentinel;
  rest = take_credentials(take_query(rest, url), url);
  const auto slash = rest.find('/');
  const std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  const auto db_slash = path.find('/');
  if (!percent_decode(path.substr(0, db_slash), url.master_name))
    throw Failure{"the master name has a bad %-escape"};
  if (url.master_name.empty())
    throw Failure{
        "the master's name is missing: give it after the sentinels, as in "
        "redis-sentinel://host:26379/mymaster"};
  if (db_slash != std::string_view::npos && db_slash + 1 < path.size())
    url.db = parse_db(path.substr(db_slash + 1));
  url.seeds = parse_endpoints(rest.substr(0, slash), kSentinelPort);
  url.host = url.seeds.front().host;
  url.port = url.seeds.front().port;
}

RedisUrl parse_or_throw_failure(std::string_view text) {
  RedisUrl url;
  if (text.starts_with(kRedisScheme)) {
    parse_tcp(text.substr(kRedisScheme.size()), url);
    return url;
  }
  if (text.starts_with(kClusterScheme)) {
    parse_cluster(text.substr(kClusterScheme.size()), url);
    return url;
  }
  if (text.starts_with(kTlsScheme)) {
    url.tls = true;
    parse_tcp(text.substr(kTlsScheme.size()), url);
    return url;
  }
  if (text.starts_with(kTlsClusterScheme)) {
    url.tls = true;
    parse_cluster(text.substr(kTlsClusterScheme.size()), url);
    return url;
  }
  if (text.starts_with(kSentinelScheme)) {
    parse_sentinel(text.substr(kSentinelScheme.size()), url);
    return url;
  }
  if (text.starts_with(kTlsSentinelScheme)) {
    url.tls = true;
    parse_sentinel(text.substr(kTlsSentinelScheme.size()), url);
    return url;
  }
  if (text.starts_with(kUnixScheme)) {
    std::string_view rest = text.substr(kUnixScheme.size());
    // unix:///path has no userinfo, whatever the path holds; unix://user:pw@/path has.
    const auto at = rest.starts_with('/') ? std::string_view::npos : rest.find("@/");
    if (at != std::string_view::npos) {
      take_credentials(rest.substr(0, at + 1), url);
      rest = rest.substr(at + 1);
    }
    url.transport = RedisUrl::Transport::unix_socket;
    url.path = std::string(take_query(rest, url));
    if (url.path.empty() || url.path.front() != '/')
      throw Failure{"the socket path must be absolute, as in unix:///run/redis.sock"};
    return url;
  }
  if (text.empty())
    throw Failure{"it is empty"};
  throw Failure{
      "it must start with redis://, rediss://, unix://, redis-cluster://, rediss-cluster://, "
      "redis-sentinel:// or rediss-sentinel://"};
}

// `url` with the value of its sentinel_password parameter, if any, replaced by "***".
std::string mask_sentinel_password(std::string_view url) {
  constexpr std::string_view kParameter = "sentinel_password=";
  std::string out(url);
  for (std::size_t at = out.find(kParameter); at != std::string::npos;
       at = out.find(kParameter, at + 1)) {
    const std::size_t start = at + kParameter.size();
    const std::size_t end = std::min(out.find('&', start), out.size());
    out.replace(start, end - start, "***");
  }
  return out;
}

// The '@' that ends the userinfo of `url` as take_credentials() finds it, the credentials starting
// at `start` (after "scheme://"), or npos: a unix:// URL's first "@/" (its path may hold '@'),
// else the last '@' before the query (whose values may hold '@').
std::size_t parsed_userinfo_end(std::string_view url, std::size_t start) {
  const std::string_view rest = url.substr(start);
  std::size_t at = std::string_view::npos;
  if (url.starts_with(kUnixScheme)) {
    if (!rest.starts_with('/'))
      at = rest.find("@/");
  } else {
    at = rest.substr(0, rest.find('?')).rfind('@');
  }
  return at == std::string_view::npos ? at : start + at;
}

// `url` with the password of its userinfo, if any, replaced by "***".
std::string mask_userinfo(std::string_view url) {
  auto at = url.rfind('@');
  if (at == std::string_view::npos)
    return std::string(url);
  const auto scheme_end = url.substr(0, at).find("://");
  if (scheme_end == std::string_view::npos) {
    // A mistyped or missing scheme ("redis:/u:p@h", "u:p@h"): the userinfo's start is unknown, so
    // everything before the '@' but a leading "scheme:" and slashes is masked.
    std::size_t start = 0;
    while (start < at && std::isalpha(static_cast<unsigned char>(url[start])))
      ++start;
    if (start == 0 || start >= at || url[start] != ':')
      start = 0;
    else
      start = url.find_first_not_of('/', start + 1);
    return std::string(url.substr(0, start)) + "***" + std::string(url.substr(at));
  }
  const auto start = scheme_end + 3;
  // Where the parser finds the userinfo's end, when it finds one: a later '@' (in a unix socket's
  // path, a query value) would put the password in the user's part, shown as it is.
  if (const auto parsed = parsed_userinfo_end(url, start); parsed != std::string_view::npos)
    at = parsed;
  const std::string_view userinfo = url.substr(start, at - start);
  const auto colon = userinfo.find(':');
  std::string out(url.substr(0, start));
  if (colon != std::string_view::npos) {
    out += userinfo.substr(0, colon);
    out += ":***";
  } else {
    out += "***";  // a lone userinfo is a password (see take_credentials)
  }
  out += url.substr(at);
  return out;
}

}  // namespace

std::string mask_password(std::string_view url) {
  return mask_userinfo(mask_sentinel_password(url));
}

RedisUrl RedisUrl::parse(std::string_view url, std::error_code& ec, std::string* why) {
  ec.clear();
  try {
    return parse_or_throw_failure(url);
  } catch (const Failure& failure) {
    ec = make_error_code(errc::invalid_url);
    if (why)
      *why = "invalid Redis URL '" + mask_password(url) + "': " + failure.why;
    return {};
  }
}

RedisUrl RedisUrl::parse(std::string_view url) {
  std::error_code ec;
  std::string why;
  RedisUrl parsed = parse(url, ec, &why);
  throw_if(ec, why);
  return parsed;
}

std::string RedisUrl::Endpoint::address() const {
  if (host.find(':') != std::string::npos)
    return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string RedisUrl::address() const {
  if (transport == Transport::unix_socket)
    return path;
  if (transport == Transport::cluster || transport == Transport::sentinel) {
    std::string out;
    for (const Endpoint& seed : seeds) {
      if (!out.empty())
        out += ',';
      out += seed.address();
    }
    if (transport == Transport::sentinel) {
      out += '/';
      out += master_name;
    }
    return out;
  }
  return Endpoint{host, port}.address();
}

RedisUrl RedisUrl::node(const Endpoint& endpoint) const {
  RedisUrl url = *this;
  url.transport = Transport::tcp;
  url.host = endpoint.host;
  url.port = endpoint.port;
  url.seeds.clear();
  url.master_name.clear();
  url.sentinel_user.clear();
  url.sentinel_password.clear();
  url.has_sentinel_password = false;
  return url;
}

std::string RedisUrl::to_string() const {
  // Appended piece by piece: g++ 12 at -O3 warns (-Wrestrict, a false positive) on the
  // `"literal" + std::string&&` chain this used to be, which breaks the Release build.
  std::string out =
      transport == Transport::unix_socket ? "unix://"
      : transport == Transport::cluster   ? (tls ? "rediss-cluster://" : "redis-cluster://")
      : transport == Transport::sentinel  ? (tls ? "rediss-sentinel://" : "redis-sentinel://")
                                          : (tls ? "rediss://" : "redis://");
  if (!user.empty()) {
    out += user;
    out += has_password ? ":***@" : "@";
  } else if (has_password) {
    out += "***@";
  }
  if (transport == Transport::unix_socket) {
    out += path;
  } else {
    out += address();
    if (db != 0)
      out += '/' + std::to_string(db);
  }
  std::vector<std::string> parameters;
  if (transport == Transport::unix_socket && db != 0)
    parameters.push_back("db=" + std::to_string(db));
  if (!sentinel_user.empty())
    parameters.push_back("sentinel_user=" + sentinel_user);
  if (has_sentinel_password)
    parameters.push_back("sentinel_password=***");
  if (replica_acks)
    parameters.push_back("replica_acks=" + std::to_string(*replica_acks));
  if (replica_ack_timeout)
    parameters.push_back("replica_ack_timeout=" + std::to_string(replica_ack_timeout->count()) +
                         "ms");
  if (safe_failover)
    parameters.push_back(*safe_failover ? "safe_failover=1" : "safe_failover=0");
  if (compat == Compat::redis6)
    parameters.push_back("compat=redis6");
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    out += i == 0 ? '?' : '&';
    out += parameters[i];
  }
  return out;
}

}  // namespace leasehold
