#include "network_lab.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "child_process.hpp"

namespace leasehold::testing {
namespace {

constexpr const char* kSubnet = "10.77.0.";
constexpr const char* kTable = "lab";

// Once its stdin ends: kills every process in the namespaces whose names start with $1, and
// removes those namespaces. Run with stdin /dev/null, it does so at once.
constexpr const char* kReapScript = R"(PATH=$PATH:/usr/sbin:/sbin
cat >/dev/null
for ns in $(ls /run/netns 2>/dev/null); do
  case $ns in "$1"*)
    ip netns pids "$ns" | xargs -r kill -9
    ip netns delete "$ns" ;;
  esac
done)";

// Starts the reap script ($1) for the prefix $2 as a grandchild in a session of its own, its
// stdin this shell's: out of the reach of whatever kills the test process and its children
// (ctest kills a timed-out test's whole tree), and left running when this shell exits.
constexpr const char* kDetach =
    R"(exec 3<&0; setsid sh -c "$1" lab-reaper "$2" <&3 3<&- >/dev/null 2>&1 &)";

}  // namespace

std::vector<std::string> NetworkLab::namespaces(const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ignored))
    if (entry.path().filename().string().starts_with(prefix))
      names.push_back(entry.path().filename().string());
  return names;
}

// Removes the namespaces of labs whose test process is gone, and what still runs in them.
void NetworkLab::remove_orphans() const {
  std::set<std::string> dead;
  for (const std::string& name : namespaces("lh")) {
    if (!name.starts_with("lh") || name.find('-') == std::string::npos)
      continue;
    const std::string pid = name.substr(2, name.find('-') - 2);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(std::stoi(pid), 0) != 0 && errno == ESRCH)
      dead.insert("lh" + pid + "-");
  }
  for (const std::string& prefix : dead) {
    try {
      run({"sh", "-c", kReapScript, "lab-reaper", prefix});
    } catch (const std::runtime_error&) {
    }
  }
}

// The reaper waits on a pipe that only this process holds (the lab's test process): when the
// process is gone, however it went, the pipe ends and the reaper removes the lab.
void NetworkLab::start_reaper() {
  reaper_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"sh", "-c", kDetach, "sh", kReapScript, prefix_}, dir_,
      ChildProcess::Input::pipe);
  if (reaper_->wait() != 0)
    throw std::runtime_error("cannot start the network lab's reaper: " + reaper_->err());
}

namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  dirs += ":/usr/sbin:/sbin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    if (::access((dirs.substr(start, end - start) + "/" + program).c_str(), X_OK) == 0)
      return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

void NetworkLab::run(const std::vector<std::string>& args) const {
  ChildProcess child(args, dir_);
  const int status = child.wait(std::chrono::seconds(20));
  if (status != 0) {
    std::string command;
    for (const std::string& arg : args)
      command += (command.empty() ? "" : " ") + arg;
    throw std::runtime_error("'" + command + "' exited " + std::to_string(status) + ": " +
                             child.err() + child.out());
  }
}

std::optional<std::string> NetworkLab::unavailable() {
  if (::geteuid() != 0)
    return "making network namespaces needs root (CI runs as root)";
  for (const char* program : {"ip", "nft"})
    if (!on_path(program))
      return std::string("'") + program + "' is not installed (iproute2, nftables)";
  return std::nullopt;
}

NetworkLab::NetworkLab() {
  if (const std::optional<std::string> why = unavailable())
    throw std::runtime_error("no network lab: " + *why);
  std::string dir = std::filesystem::temp_directory_path().string() + "/leasehold-lab-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr)
    throw std::runtime_error("cannot make a temp directory for the network lab");
  dir_ = dir;
  remove_orphans();
  static std::atomic<int> labs{0};
  prefix_ = "lh" + std::to_string(::getpid()) + "-" + std::to_string(++labs) + "-";
  hub_ = prefix_ + "hub";
  try {
    start_reaper();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
  run({"ip", "netns", "add", hub_});
  try {
    run({"ip", "-n", hub_, "link", "add", "br0", "type", "bridge"});
    run({"ip", "-n", hub_, "link", "set", "br0", "up"});
    run({"ip", "netns", "exec", hub_, "nft", "add", "table", "bridge", kTable});
    run({"ip", "netns", "exec", hub_, "nft", "add", "chain", "bridge", kTable, "forward",
         "{ type filter hook forward priority 0; }"});
  } catch (...) {
    run({"ip", "netns", "delete", hub_});
    reaper_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

NetworkLab::~NetworkLab() {
  for (const Host& host : hosts_) {
    try {
      run({"ip", "netns", "delete", host.netns});
    } catch (const std::runtime_error&) {
    }
  }
  try {
    run({"ip", "netns", "delete", hub_});
  } catch (const std::runtime_error&) {
  }
  reaper_.reset();  // its pipe ends: it finds nothing left to remove
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

const NetworkLab::Host& NetworkLab::add_host(const std::string& name) {
  const std::size_t index = hosts_.size();
  if (index >= 200)
    throw std::runtime_error("a network lab holds at most 200 hosts");
  Host host{name, prefix_ + name, kSubnet + std::to_string(index + 2)};
  run({"ip", "netns", "add", host.netns});
  hosts_.push_back(host);  // removed with the lab from here on
  const std::string link = "v" + std::to_string(index);
  run({"ip", "-n", host.netns, "link", "set", "lo", "up"});
  run({"ip", "-n", hub_, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns",
       host.netns});
  run({"ip", "-n", hub_, "link", "set", link, "master", "br0", "up"});
  run({"ip", "-n", host.netns, "addr", "add", host.address + "/24", "dev", "eth0"});
  run({"ip", "-n", host.netns, "link", "set", "eth0", "up"});
  return hosts_.back();
}

const NetworkLab::Host& NetworkLab::host(const std::string& name) const {
  for (const Host& host : hosts_)
    if (host.name == name)
      return host;
  throw std::runtime_error("the network lab has no host '" + name + "'");
}

std::vector<std::string> NetworkLab::on(const Host& host) const {
  return {"ip", "netns", "exec", host.netns};
}

void NetworkLab::drop_between(const Host& a, const Host& b) {
  for (const auto& [from, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    run({"ip", "netns", "exec", hub_, "nft", "add", "rule", "bridge", kTable, "forward", "ip",
         "saddr", from->address, "ip", "daddr", to->address, "drop"});
  }
}

void NetworkLab::partition(const std::vector<std::string>& side) {
  const auto inside = [&](const Host& host) {
    for (const std::string& name : side)
      if (name == host.name)
        return true;
    return false;
  };
  for (const std::string& name : side)
    host(name);  // throws for a name the lab does not have
  for (const Host& a : hosts_)
    for (const Host& b : hosts_)
      if (inside(a) && !inside(b))
        drop_between(a, b);
}

void NetworkLab::isolate(const std::string& name) {
  partition({name});
}

void NetworkLab::heal() {
  run({"ip", "netns", "exec", hub_, "nft", "flush", "chain", "bridge", kTable, "forward"});
}

}  // namespace leasehold::testing
