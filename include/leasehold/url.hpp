// Where a Redis server is and how to log in to it:
//   redis://[user[:password]@]host[:port][/db]     (host may be [IPv6]; port defaults to 6379)
//   rediss://[user[:password]@]host[:port][/db]    (the same over TLS: see ClientOptions::tls)
//   unix:///path/to/socket[?db=N]                  (also unix://[user[:password]@]/path?db=N)
//   redis-cluster://[user[:password]@]host:port[,host:port...]   (seed nodes of a Redis Cluster)
//   rediss-cluster://...                           (a Redis Cluster over TLS)
//   redis-sentinel://[user[:password]@]host[:port][,host[:port]...]/MASTER_NAME[/db]
//       [?sentinel_user=U&sentinel_password=P]     (the master that Redis Sentinel names; the
//                                                   hosts are sentinels, port 26379 by default)
//   rediss-sentinel://...                          (the same over TLS: sentinels and servers)
// User and password are the data servers' (a Sentinel URL's sentinels take theirs as query
// parameters). Credentials and the master name are percent-decoded. Every URL also takes
// ?replica_acks=N&replica_ack_timeout=100ms and ?safe_failover=1, which set the ClientOptions
// fields of those names (see options.hpp) over the options the Client is given, and
// ?compat=redis6 (below). A malformed
// URL is an Error(errc::invalid_url) whose message quotes the URL with its password masked and says
// what is wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace leasehold {

struct RedisUrl {
  enum class Transport : std::uint8_t { tcp, unix_socket, cluster, sentinel };

  struct Endpoint {
    std::string host;
    std::uint16_t port = 6379;
    std::string address() const;  // "host:port", "[v6]:port"
    bool operator==(const Endpoint&) const = default;
  };

  Transport transport = Transport::tcp;
  std::string host;  // tcp: name or address (IPv6 without brackets); cluster, sentinel: first seed
  std::uint16_t port = 6379;    // tcp; cluster, sentinel: first seed's
  std::vector<Endpoint> seeds;  // cluster: the nodes to ask for the topology; sentinel: sentinels
  std::string path;             // unix socket path
  std::string user;             // empty: none (password alone logs in as the default user)
  std::string password;         // empty: no AUTH
  bool has_password = false;    // distinguishes "no password" from an empty one
  int db = 0;
  bool tls = false;  // rediss://, rediss-cluster:// and rediss-sentinel://
  // Sentinel: the name the sentinels know the master by, and their own credentials (empty user:
  // the default one; no password: no AUTH to the sentinels).
  std::string master_name;
  std::string sentinel_user;
  std::string sentinel_password;
  bool has_sentinel_password = false;
  // Set by the URL's query parameters of those names: they override ClientOptions'.
  std::optional<int> replica_acks;
  std::optional<std::chrono::milliseconds> replica_ack_timeout;
  std::optional<bool> safe_failover;  // ?safe_failover=1 (or 0)
  // ?compat=redis6 sends only what Redis 6.0 knows (no SET ... NX ... GET, no sharded pub/sub),
  // whatever the server's version; ?compat=auto (the default) does so for servers older than 7.0
  // (docs/connection.md, "Servers").
  enum class Compat : std::uint8_t { automatic, redis6 };
  Compat compat = Compat::automatic;

  // Throws Error(errc::invalid_url) with a message that quotes the masked URL.
  static RedisUrl parse(std::string_view url);
  // Non-throwing: on failure sets ec and returns a description of the problem in *why.
  static RedisUrl parse(std::string_view url, std::error_code& ec, std::string* why = nullptr);

  // The URL with the password replaced by "***": safe to log.
  std::string to_string() const;
  // Where it connects, e.g. "127.0.0.1:6380", "/tmp/redis.sock", for a cluster its seeds, for
  // Sentinel its sentinels and the master's name ("s1:26379,s2:26379/mymaster").
  std::string address() const;
  // A cluster URL's credentials for one of its nodes, a Sentinel URL's for the master the
  // sentinels named: a redis:// (rediss://) URL to that endpoint.
  RedisUrl node(const Endpoint& endpoint) const;
};

// `url` with any password (a sentinel_password too) replaced by "***", for messages about a URL
// that may not parse.
std::string mask_password(std::string_view url);

}  // namespace leasehold
