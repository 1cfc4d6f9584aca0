// A replicated Redis watched by Redis Sentinel, for one test: a master, its replicas and the
// sentinels that watch it, each a private RedisServer (temp dir, free loopback port, never 6379),
// with short timeouts so that a failover takes a second or two. Ready when every replica is in
// sync and every sentinel knows the master, its replicas and the other sentinels. Stopped by the
// destructor.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "network_lab.hpp"
#include "redis_server.hpp"
#include "test_certificates.hpp"

namespace leasehold::testing {

class RedisSentinelGroup {
 public:
  struct Options {
    std::size_t replicas = 2;
    std::size_t sentinels = 3;
    std::string master_name = "main";
    // How long the master may be silent before a sentinel thinks it down.
    std::chrono::milliseconds down_after{1000};
    std::chrono::milliseconds failover_timeout{3000};
    // When set: how often each sentinel looks at every server (INFO), and says hello twice as
    // often (SENTINEL DEBUG info-period, publish-period; Sentinel's own are 10 s and 2 s).
    // Sentinel takes an old master back as a replica once it has been up for four hello
    // periods, at its next look: shorter periods shorten every failover's tail.
    std::chrono::milliseconds info_period{0};
    // The sentinels' own password (requirepass), empty for none.
    std::string sentinel_password;
    // When set: every server and sentinel also listens on a TLS port with these certificates,
    // replicates and watches over TLS, and the sentinels name the TLS ports (url() is then
    // rediss-sentinel://). The plain ports stay for the tests' own commands.
    const TestCertificates* tls = nullptr;
    // When set: every server and sentinel runs on a host of its own in this lab ("redis-0", the
    // first master, "redis-1"…, "sentinel-0"…), listening on its address there, so that a test
    // can cut them apart. Without TLS.
    NetworkLab* lab = nullptr;
  };

  RedisSentinelGroup();
  explicit RedisSentinelGroup(Options options);
  RedisSentinelGroup(const RedisSentinelGroup&) = delete;
  RedisSentinelGroup& operator=(const RedisSentinelGroup&) = delete;

  const Options& options() const { return options_; }
  // redis-sentinel://127.0.0.1:<port>,…/<master name> (rediss-sentinel:// and the TLS ports
  // with Options::tls; the lab addresses with Options::lab).
  std::string url() const;
  // "address:port" by which the sentinels name `server`.
  std::string named_address(const RedisServer& server) const;
  // The lab host `server` runs on (with Options::lab).
  const std::string& host_name(const RedisServer& server) const;
  // The port by which the sentinels name `server`: its TLS port with Options::tls.
  int named_port(const RedisServer& server) const;

  // The data servers: 0 was the first master, the others its replicas.
  std::size_t server_count() const { return servers_.size(); }
  RedisServer& server(std::size_t i) { return *servers_.at(i); }
  RedisServer& sentinel(std::size_t i) { return *sentinels_.at(i); }

  // The data server that says it is a master (ROLE), or null when none does.
  RedisServer* master();
  // SENTINEL FAILOVER through the first sentinel, then waits (up to `timeout`) until another
  // server is master, in sync with the others, and every running sentinel names it. The new
  // master.
  RedisServer& failover(std::chrono::milliseconds timeout);
  // SENTINEL FAILOVER through the first sentinel, then waits (up to `timeout`) only until some
  // sentinel names another server the master (the one leading the failover does first): that
  // server. The old master may still say it is one.
  RedisServer& start_failover(std::chrono::milliseconds timeout);
  // Waits until every running sentinel names `server` the master.
  void wait_named(RedisServer& server, std::chrono::milliseconds timeout);
  // Waits until a majority of the sentinels name a server other than `old` the master: that
  // server. Each sentinel is asked over its unix socket, which no lab partition cuts.
  RedisServer& wait_replaced(const RedisServer& old, std::chrono::milliseconds timeout);
  // Waits until the group is whole again: one server says it is master, every sentinel names
  // it, and every other running server is its replica with the link up. That master.
  RedisServer& wait_settled(std::chrono::milliseconds timeout);
  // What each server says of its replication and each sentinel of the master and its replicas:
  // for a report of why the group did not settle.
  std::string describe();
  // Points every running server but the master that most sentinels name at that master
  // (REPLICAOF), as an operator would when Sentinel leaves one detached.
  void reattach_to_named_master();

 private:
  // SENTINEL FAILOVER through the first sentinel, asked again while it finds no good replica.
  void send_failover(std::chrono::milliseconds timeout);
  // A command to a sentinel, with its password when it has one.
  Reply ask_sentinel(RedisServer& sentinel, const std::vector<std::string>& args) const;

  // The arguments that give a server or sentinel its TLS port (none without Options::tls).
  std::vector<std::string> tls_args(int tls_port) const;

  Options options_;
  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
  // The master that `sentinel` names ("address:port"), or "" if it names none or cannot say.
  std::string named_by(RedisServer& sentinel) const;

  // With Options::tls: the TLS port of each server and sentinel, by its plain port.
  std::map<int, int> tls_ports_;
  // With Options::lab: the host of each server and sentinel, by its plain port.
  std::map<int, NetworkLab::Host> hosts_;
};

}  // namespace leasehold::testing
