// Hosts on a private network that one test makes and removes: a network namespace per host, each
// with a veth link into a bridge that lives in a namespace of its own (the hub), and an address
// in 10.77.0.0/24. Nothing is added to the machine's own namespace, and a lab's hosts reach only
// each other. Partitions drop packets on the bridge (nftables, bridge family), as a failed
// switch would: silently, for connections already open and for new ones.
//
// Needs root (CI runs as root), iproute2's `ip` and nftables' `nft`; unavailable() says what is
// missing. Namespaces are named lh<pid>-<n>-<host>. A lab goes with its test process however that
// ends: killed by a timeout, Ctrl-C or a crash, a reaper it started removes its namespaces and
// kills what still runs in them; and a new lab removes whatever a dead test process left.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::testing {

class ChildProcess;

class NetworkLab {
 public:
  struct Host {
    std::string name;
    std::string netns;
    std::string address;  // 10.77.0.N
  };

  // Why this process cannot make a lab, or nothing when it can.
  static std::optional<std::string> unavailable();
  // The network namespaces that exist now (`ip netns list`) whose names start with `prefix`.
  static std::vector<std::string> namespaces(const std::string& prefix);

  NetworkLab();
  ~NetworkLab();  // removes every namespace it made (and with them their links)
  NetworkLab(const NetworkLab&) = delete;
  NetworkLab& operator=(const NetworkLab&) = delete;

  // A new host, reachable at once from every other host of the lab.
  const Host& add_host(const std::string& name);
  const Host& host(const std::string& name) const;

  // What to put before a program's arguments to run it on `host` (ip netns exec …).
  std::vector<std::string> on(const Host& host) const;

  // Drops every packet between a host of `side` and a host not in it, both ways, until heal().
  void partition(const std::vector<std::string>& side);
  // Drops every packet to and from `host`.
  void isolate(const std::string& host);
  // Ends every partition.
  void heal();

 private:
  void drop_between(const Host& a, const Host& b);
  // Runs `args` (args[0] found on PATH) and waits for it; throws, with its output, when it fails.
  void run(const std::vector<std::string>& args) const;
  void remove_orphans() const;
  void start_reaper();

  std::string dir_;     // the commands' output
  std::string prefix_;  // lh<pid>-<n>-
  std::string hub_;
  std::vector<Host> hosts_;
  // Holds the pipe whose end tells the reaper that this process is gone.
  std::unique_ptr<ChildProcess> reaper_;
};

}  // namespace leasehold::testing
