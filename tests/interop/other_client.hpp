// The other clients of the interop tests: redis-py's Lock (redis_py_lock.py, run by
// /usr/bin/python3) and node-redlock on one instance (redlock_lock.js, run by node with the
// packages `npm ci` put in the build folder). Each step is one run of its driver script.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "build_paths.hpp"
#include "driver_process.hpp"

namespace leasehold::interop {

struct OtherClientKind {
  std::string name;                  // "redis_py", "redlock": a test name's suffix
  std::vector<std::string> command;  // the interpreter and the driver script
  std::vector<std::string> env;      // "NAME=value" for the driver
  std::string install_hint;          // what to do when it cannot run
};

inline std::string interop_dir() {
  return std::string(testing::build_paths::source_dir) + "/tests/interop";
}

inline OtherClientKind redis_py_client() {
  const std::string python = testing::build_paths::interop_python;
  return {
      "redis_py",
      {python, interop_dir() + "/redis_py_lock.py"},
      {},
      "redis-py runs under " + python + " with Debian's python3-redis: scripts/setup installs it"};
}

inline OtherClientKind redlock_client() {
  const std::string node_modules = testing::build_paths::interop_node_modules;
  return {"redlock",
          {testing::build_paths::interop_node, interop_dir() + "/redlock_lock.js"},
          {"NODE_PATH=" + node_modules},
          "node-redlock runs under node (scripts/setup installs Debian's nodejs and npm) with the "
          "packages the interop_npm_ci test installs in " +
              node_modules + " (npm ci, from tests/interop/package-lock.json)"};
}

// One client of a kind, against one Redis server; the steps throw std::runtime_error (saying
// what ran and what it printed) on anything but a well-formed answer.
class OtherClient {
 public:
  static constexpr std::chrono::milliseconds kStepTimeout{30000};

  OtherClient(OtherClientKind kind, std::string url, std::string scratch_dir)
      : kind_(std::move(kind)), url_(std::move(url)), scratch_(std::move(scratch_dir)) {}

  const OtherClientKind& kind() const { return kind_; }

  // "ok <version>": the interpreter, the client's packages and the server all answer.
  std::string check() const {
    try {
      return step({"check"});
    } catch (const std::exception& error) {
      throw std::runtime_error(std::string(error.what()) + "\n" + kind_.install_hint);
    }
  }
  // The value it stored, or nothing when the key is taken.
  std::optional<std::string> acquire(const std::string& key, std::chrono::milliseconds ttl) const {
    const std::string value = step({"acquire", key, std::to_string(ttl.count())});
    if (value == "busy")
      return std::nullopt;
    return value;
  }
  bool release(const std::string& key, const std::string& value) const {
    return boolean(step({"release", key, value}));
  }
  bool extend(const std::string& key, const std::string& value,
              std::chrono::milliseconds ttl) const {
    return boolean(step({"extend", key, value, std::to_string(ttl.count())}));
  }

  // A torture worker (see the driver scripts): it prints "ready", waits for a line on stdin,
  // runs `cycles` critical sections and prints "done <cycles>".
  DriverProcess worker(const std::string& key, std::chrono::milliseconds ttl, int cycles,
                       std::chrono::milliseconds hold, const std::string& events_file,
                       const std::string& stderr_file) const {
    return DriverProcess(argv({"worker", key, std::to_string(ttl.count()), std::to_string(cycles),
                               std::to_string(hold.count()), events_file}),
                         kind_.env, stderr_file);
  }

 private:
  std::vector<std::string> argv(const std::vector<std::string>& args) const {
    std::vector<std::string> all = kind_.command;
    all.push_back(url_);
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  std::string step(const std::vector<std::string>& args) const {
    std::string out =
        run_to_end(argv(args), kind_.env, scratch_ + "/" + kind_.name + ".stderr", kStepTimeout);
    if (!out.empty() && out.back() == '\n')
      out.pop_back();
    if (out.empty() || out.find('\n') != std::string::npos)
      throw std::runtime_error("`" + join(argv(args)) + "` printed not one line: " + out);
    return out;
  }
  bool boolean(const std::string& answer) const {
    if (answer != "true" && answer != "false")
      throw std::runtime_error(kind_.name + " answered neither true nor false: " + answer);
    return answer == "true";
  }

  OtherClientKind kind_;
  std::string url_;
  std::string scratch_;
};

}  // namespace leasehold::interop
