// Where a Redis server is and how to log in to it:
//   redis://[user[:password]@]host[:port][/db]     (host may be [IPv6]; port defaults to 6379)
//   rediss://[user[:password]@]host[:port][/db]    (the same over TLS: see ClientOptions::tls)
//   unix:///path/to/socket[?db=N]                  (also unix://[user[:password]@]/path?db=N)
//   redis-cluster://[user[:password]@]host:port[,host:port...]   (seed nodes of a Redis Cluster)
//   rediss-cluster://...                           (a Redis Cluster over TLS)
// User and password are percent-decoded. A malformed URL is an Error(errc::invalid_url) whose
// message quotes the URL with its password masked and says what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace leasehold {

struct RedisUrl {
  enum class Transport : std::uint8_t { tcp, unix_socket, cluster };

  struct Endpoint {
    std::string host;
    std::uint16_t port = 6379;
    std::string address() const;  // "host:port", "[v6]:port"
    bool operator==(const Endpoint&) const = default;
  };

  Transport transport = Transport::tcp;
  std::string host;             // tcp: name or address (IPv6 without brackets); cluster: first seed
  std::uint16_t port = 6379;    // tcp; cluster: first seed's
  std::vector<Endpoint> seeds;  // cluster: the nodes to ask for the topology
  std::string path;             // unix socket path
  std::string user;             // empty: none (password alone logs in as the default user)
  std::string password;         // empty: no AUTH
  bool has_password = false;    // distinguishes "no password" from an empty one
  int db = 0;
  bool tls = false;  // rediss:// and rediss-cluster://

  // Throws Error(errc::invalid_url) with a message that quotes the masked URL.
  static RedisUrl parse(std::string_view url);
  // Non-throwing: on failure sets ec and returns a description of the problem in *why.
  static RedisUrl parse(std::string_view url, std::error_code& ec, std::string* why = nullptr);

  // The URL with the password replaced by "***": safe to log.
  std::string to_string() const;
  // Where it connects, e.g. "127.0.0.1:6380", "/tmp/redis.sock" or, for a cluster, its seeds.
  std::string address() const;
  // A cluster URL's credentials for one of its nodes: a redis:// URL to that endpoint.
  RedisUrl node(const Endpoint& endpoint) const;
};

// `url` with any password replaced by "***", for messages about a URL that may not parse.
std::string mask_password(std::string_view url);

}  // namespace leasehold
