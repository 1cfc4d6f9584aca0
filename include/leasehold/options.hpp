// The options of a Client: timeouts, reconnecting, TLS, replica acknowledgement.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace leasehold {

class Observer;  // observer.hpp

// TLS for rediss:// and rediss-cluster:// URLs. The server's certificate is always verified:
// against `ca_file` (PEM) when given, else against the system's trusted certificates; and its
// name against `server_name`, or the URL's host when that is empty (an IP address is checked
// against the certificate's IP entries). A server run with tls-auth-clients (Redis' default)
// also wants a client certificate and its key.
struct TlsOptions {
  std::string ca_file;      // PEM file of the CAs that may sign the server's certificate
  std::string cert_file;    // PEM client certificate (chain), for servers that ask for one
  std::string key_file;     // PEM private key of cert_file
  std::string server_name;  // the name to expect in the server's certificate, and to send (SNI)
};

struct ClientOptions {
  // One attempt to connect, including AUTH/SELECT, must finish within this.
  std::chrono::milliseconds connect_timeout{2000};
  // A call that has no reply this long after it was made fails with errc::command_timeout.
  std::chrono::milliseconds command_timeout{2000};
  // Reconnect backoff: doubles from min to max, with jitter.
  std::chrono::milliseconds reconnect_delay_min{25};
  std::chrono::milliseconds reconnect_delay_max{2000};
  // CLIENT SETNAME after connecting (visible in CLIENT LIST); empty: none.
  std::string client_name = "leasehold";
  // Redis Cluster (redis-cluster:// URLs): how often the slot map is read again, besides after a
  // MOVED reply, a CLUSTERDOWN or a lost connection.
  std::chrono::milliseconds cluster_refresh_interval{5000};
  // Replica acknowledgement (off: 0). After each acquire or extend, the client sends
  // WAIT replica_acks replica_ack_timeout on the same connection; fewer acknowledgements make the
  // call fail with errc::not_replicated (and an acquire is released). Replication stays
  // asynchronous: this narrows, not closes, the window in which a failover loses a lease.
  int replica_acks = 0;
  std::chrono::milliseconds replica_ack_timeout{100};
  // Safe failover (docs/reliability.md, "Safe failover"): every grant and extension counts only
  // once every replica that could be promoted has it — each replica the sentinels know of for
  // the master (asked again at every resolve), and at least replica_acks. A lease the client was
  // told it holds is then on whichever replica a failover promotes, and a master cut off from
  // any replica can neither grant nor extend. The cost: an extra round trip per grant, and no
  // grant while any replica is away. Needs a redis-sentinel:// URL, or replica_acks set to the
  // number of replicas.
  bool safe_failover = false;
  // Certificates for rediss:// URLs; setting any with another URL is an error.
  TlsOptions tls;
  // After its first connection the client reads the server's maxmemory-policy (INFO memory) and
  // logs a warning unless it is noeviction: any other policy may evict lock keys.
  bool warn_on_eviction_policy = true;
  // Told what happens to the leases this client serves (observer.hpp); none: nothing is told.
  std::shared_ptr<Observer> observer;
};

}  // namespace leasehold
