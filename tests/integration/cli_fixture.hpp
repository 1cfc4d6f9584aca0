// What the leasehold command's tests share: the real binary run as a child process next to a
// real redis-server, and checks of what it prints.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "shared_server.hpp"

namespace leasehold::cli_testing {

inline std::string until_exists(const std::string& path) {
  return "i=0; while [ ! -e " + path + " ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done";
}

// Whether the process `pid` still runs: it exists and is not a zombie waiting to be reaped.
inline bool running(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto name_end = line.rfind(')');  // the state follows the name in parentheses
  return name_end == std::string::npos || name_end + 2 >= line.size() || line[name_end + 2] != 'Z';
}

// Whether `text` (output of the command) holds a byte that drives a terminal: a C0 control but the
// line feed that ends a line (ESC, BEL, CR, backspace, ...), DEL, a C1 control (CSI is 0x9b, or
// "\xc2\x9b" in UTF-8), or 0xff, which no UTF-8 holds.
inline ::testing::AssertionResult shows_no_control(const std::string& text) {
  for (std::size_t at = 0; at < text.size(); ++at) {
    const auto byte = static_cast<unsigned char>(text[at]);
    const auto next = at + 1 < text.size() ? static_cast<unsigned char>(text[at + 1]) : 0;
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f || byte == 0x9b || byte == 0xff ||
        (byte == 0xc2 && next >= 0x80 && next < 0xa0))
      return ::testing::AssertionFailure()
             << "byte " << int{byte} << " at " << at << " of: " << text;
  }
  return ::testing::AssertionSuccess();
}

// A holder's field as a lease's value stores it (holder.hpp): every byte but letters and digits
// %-escaped.
inline std::string stored_field(const std::string& text) {
  std::string stored;
  for (const char c : text) {
    char escaped[4];
    std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
    stored += std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c) : escaped;
  }
  return stored;
}

// One run of the leasehold binary.
class Cli : public leasehold::testing::ChildProcess {
 public:
  Cli(std::vector<std::string> args, const std::string& dir, Input input = Input::null)
      : ChildProcess(with_program(std::move(args)), dir, input) {}

 private:
  static std::vector<std::string> with_program(std::vector<std::string> args) {
    args.insert(args.begin(), leasehold::testing::build_paths::cli);
    return args;
  }
};

class CliTest : public leasehold::testing::SharedServerTest {
 protected:
  void SetUp() override {
    const std::string number = std::to_string(unique_number());
    name_ = "job" + number;
    prefix_ = "ops" + number;  // a prefix of this test's own, for list's whole-prefix scans
  }

  // leasehold --redis <server> ARGS...
  Cli cli(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--redis", server_->unix_url()});
    return Cli(std::move(args), server_->dir());
  }
  std::string file(const std::string& what) const { return server_->dir() + "/" + name_ + what; }
  std::string writer_key() const { return "leasehold:RwLock:{run:" + name_ + "}:w"; }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }

  std::string name_;
  std::string prefix_;
};

}  // namespace leasehold::cli_testing
