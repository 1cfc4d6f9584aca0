// The split-phase commands (acquire, extend, release --token, hold) and --raw-key: the real
// binary, a real redis-server, real child processes and shells.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::eventually;

bool is_token_line(const std::string& out) {
  return std::regex_match(out, std::regex("[0-9a-f]{32}\n"));
}

class CliSplitTest : public testing::SharedServerTest {
 protected:
  void SetUp() override { name_ = "split" + std::to_string(unique_number()); }

  // leasehold --redis <server> ARGS..., run to its end.
  struct Ran {
    int code;
    std::string out, err;
  };
  Ran run(std::vector<std::string> args) const {
    ChildProcess child(cli_args(std::move(args)), server_->dir());
    const int code = child.wait();
    return {code, child.out(), child.err()};
  }
  std::vector<std::string> cli_args(std::vector<std::string> args,
                                    const std::string& url = {}) const {
    args.insert(args.begin(),
                {testing::build_paths::cli, "--redis", url.empty() ? server_->unix_url() : url});
    return args;
  }
  std::string token_of(const Ran& ran) const { return ran.out.substr(0, 32); }
  std::string writer_key() const { return "leasehold:RwLock:{run:" + name_ + "}:w"; }
  std::string readers_key() const { return "leasehold:RwLock:{run:" + name_ + "}:r"; }
  std::string get(const std::string& key) const { return server_->command({"GET", key}).str; }
  long long pttl(const std::string& key) const { return server_->command({"PTTL", key}).integer; }
  bool exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer == 1;
  }

  std::string name_;
};

TEST_F(CliSplitTest, AcquirePrintsATokenThatExtendAndReleaseActOn) {
  const Ran acquired = run({"acquire", "-t", "5s", name_});
  ASSERT_EQ(acquired.code, 0) << acquired.err;
  ASSERT_TRUE(is_token_line(acquired.out)) << acquired.out;
  const std::string token = token_of(acquired);
  EXPECT_EQ(get(writer_key()).substr(0, 32), token) << "the token is the lease's id";
  EXPECT_LE(pttl(writer_key()), 5000);

  EXPECT_EQ(run({"acquire", "-n", name_}).code, 1) << "held: the conflict code";
  EXPECT_EQ(run({"acquire", "-n", "-E", "7", name_}).code, 7);

  const Ran extended = run({"extend", "--token", token, "-t", "20s", name_});
  EXPECT_EQ(extended.code, 0) << extended.err;
  EXPECT_GT(pttl(writer_key()), 15000) << "restarted for the new TTL";

  EXPECT_EQ(run({"release", "--token", token, name_}).code, 0);
  EXPECT_FALSE(exists(writer_key()));
  const Ran again = run({"release", "--token", token, name_});
  EXPECT_EQ(again.code, 1) << "released already";
  EXPECT_NE(again.err.find("not held by this token"), std::string::npos) << again.err;
  EXPECT_EQ(run({"extend", "--token", token, name_}).code, 1) << "an ended lease stays ended";
}

TEST_F(CliSplitTest, AnAcquiredLeaseLivesForItsTtlOnly) {
  const Ran acquired = run({"acquire", "-t", "300ms", name_});
  ASSERT_EQ(acquired.code, 0) << acquired.err;
  EXPECT_TRUE(eventually([&] { return !exists(writer_key()); }, 5s)) << "nobody extends it";
  EXPECT_EQ(run({"extend", "--token", token_of(acquired), name_}).code, 1);
  // A waiting acquire gets a lease that runs out meanwhile.
  ASSERT_EQ(run({"acquire", "-t", "400ms", name_}).code, 0);
  const Ran waited = run({"acquire", "-w", "10s", name_});
  EXPECT_EQ(waited.code, 0) << waited.err;
  EXPECT_TRUE(is_token_line(waited.out));
}

TEST_F(CliSplitTest, EnvOutputMakesTheNextStepsOfAShellScriptWork) {
  const std::string cli =
      std::string("'") + testing::build_paths::cli + "' --redis '" + server_->unix_url() + "'";
  ChildProcess script({"sh", "-c",
                       "set -e; eval \"$(" + cli + " acquire --env " + name_ +
                           ")\"; echo \"$LEASEHOLD_NAME $LEASEHOLD_FENCE\"; " + cli + " status " +
                           name_ + "; " + cli + " extend " + name_ + "; " + cli + " release " +
                           name_ + "; " + cli + " release " + name_ + " || echo gone:$?"},
                      server_->dir());
  ASSERT_EQ(script.wait(), 0) << script.err();
  const std::string out = script.out();
  EXPECT_EQ(out.find(name_ + " "), 0u) << out;
  EXPECT_NE(out.find("held exclusively by"), std::string::npos) << out;
  EXPECT_NE(out.find("\"sh -c set -e; eval"), std::string::npos)
      << "the holder's label is the command line of the script that took it: " << out;
  EXPECT_NE(out.find("gone:1"), std::string::npos) << "the second release finds nothing: " << out;
  EXPECT_FALSE(exists(writer_key()));
}

TEST_F(CliSplitTest, JsonTellsTheTokenAndTheFenceAndSharedLeasesAreReaders) {
  const Ran exclusive = run({"acquire", "--json", name_});
  ASSERT_EQ(exclusive.code, 0) << exclusive.err;
  const auto json = nlohmann::json::parse(exclusive.out);
  EXPECT_EQ(json["name"], name_);
  EXPECT_EQ(json["kind"], "exclusive");
  EXPECT_GE(json["fence"].get<long long>(), 1);
  EXPECT_EQ(json["ttl_ms"], 30000);
  const std::string token = json["token"];
  ASSERT_EQ(run({"release", "--token", token, name_}).code, 0);

  const Ran first = run({"acquire", "-s", "--json", name_});
  const Ran second = run({"acquire", "-s", name_});
  ASSERT_EQ(first.code, 0) << first.err;
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_TRUE(nlohmann::json::parse(first.out)["fence"].is_null());
  EXPECT_EQ(server_->command({"ZCARD", readers_key()}).integer, 2);
  EXPECT_EQ(run({"acquire", "-n", name_}).code, 1) << "readers keep a writer out";
  EXPECT_EQ(run({"release", "--token", token_of(second), name_}).code, 0);
  EXPECT_EQ(run({"extend", "--token", nlohmann::json::parse(first.out)["token"], name_}).code, 0);
  EXPECT_EQ(run({"release", "--token", nlohmann::json::parse(first.out)["token"], name_}).code, 0);
  EXPECT_FALSE(exists(readers_key()));
}

TEST_F(CliSplitTest, BadTokensAndMissingRedisGetTheirExitCodes) {
  ASSERT_EQ(run({"acquire", name_}).code, 0);
  EXPECT_EQ(run({"release", "--token", "0123456789abcdef0123456789abcdef", name_}).code, 1)
      << "another token does not release it";
  EXPECT_TRUE(exists(writer_key()));
  const Ran malformed = run({"extend", "--token", "nothex", name_});
  EXPECT_EQ(malformed.code, 64);
  EXPECT_NE(malformed.err.find("32 hex digits"), std::string::npos) << malformed.err;
  const Ran neither = run({"release", name_});
  EXPECT_EQ(neither.code, 64);
  EXPECT_NE(neither.err.find("--token"), std::string::npos) << neither.err;
  const std::string down = "redis://127.0.0.1:" + std::to_string(testing::free_port());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"acquire", name_},
        {"extend", "--token", "0123456789abcdef0123456789abcdef", name_},
        {"release", "--token", "0123456789abcdef0123456789abcdef", name_}}) {
    ChildProcess child(cli_args(args, down), server_->dir());
    EXPECT_EQ(child.wait(), 69) << args[0] << ": " << child.err();
  }
}

TEST_F(CliSplitTest, HoldKeepsTheLeaseUntilItsInputEnds) {
  ChildProcess hold(cli_args({"hold", "-t", "300ms", name_}), server_->dir(),
                    ChildProcess::Input::pipe);
  ASSERT_TRUE(eventually([&] { return hold.out().size() == 33; }, 10s)) << hold.err();
  EXPECT_TRUE(is_token_line(hold.out()));
  EXPECT_EQ(get(writer_key()).substr(0, 32), hold.out().substr(0, 32));
  // Three TTLs: it is kept alive.
  const auto until = std::chrono::steady_clock::now() + 900ms;
  while (std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(exists(writer_key())) << "hold lets its lease run out";
  hold.close_input();
  EXPECT_EQ(hold.wait(), 0) << hold.err();
  EXPECT_FALSE(exists(writer_key())) << "released at the end";
}

TEST_F(CliSplitTest, HoldTellsSystemdItIsReadyOnceTheLeaseIsHeld) {
  const std::string path = server_->dir() + "/notify-" + name_ + ".sock";
  const int notify = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(notify, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(notify, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  std::vector<std::string> args = cli_args({"hold", name_});
  args.insert(args.begin(), {"env", "NOTIFY_SOCKET=" + path});
  ChildProcess hold(args, server_->dir());
  pollfd ready{notify, POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 10'000), 1) << hold.err();
  char message[64] = {};
  ASSERT_GT(::recv(notify, message, sizeof message - 1, 0), 0);
  EXPECT_STREQ(message, "READY=1");
  EXPECT_TRUE(exists(writer_key())) << "ready only once the lease is held";
  hold.signal(SIGTERM);
  EXPECT_EQ(hold.wait(), 0) << hold.err();
  ::close(notify);
}

TEST_F(CliSplitTest, HoldEndsOnSigtermExits75WhenLostAnd124PastMaxTime) {
  {
    // stdin /dev/null (a systemd unit's): it does not end the hold.
    ChildProcess hold(cli_args({"hold", "-t", "1s", name_}), server_->dir());
    ASSERT_TRUE(eventually([&] { return hold.out().size() == 33; }, 10s)) << hold.err();
    EXPECT_EQ(hold.wait(300ms), -1) << "still holding";
    hold.signal(SIGTERM);
    EXPECT_EQ(hold.wait(), 0) << hold.err();
    EXPECT_FALSE(exists(writer_key()));
  }
  {
    ChildProcess hold(cli_args({"hold", "-t", "1s", name_}), server_->dir());
    ASSERT_TRUE(eventually([&] { return hold.out().size() == 33; }, 10s)) << hold.err();
    ASSERT_EQ(run({"release", "--force", name_}).code, 0);
    EXPECT_EQ(hold.wait(), 75);
    EXPECT_NE(hold.err().find("lost the lease"), std::string::npos) << hold.err();
  }
  ChildProcess hold(cli_args({"hold", "--max-time", "300ms", name_}), server_->dir());
  EXPECT_EQ(hold.wait(), 124) << hold.err();
  EXPECT_GE(hold.took(), 300ms);
  EXPECT_FALSE(exists(writer_key())) << "given back";
}

TEST_F(CliSplitTest, ARawKeyIsTakenAsOtherClientsTakeIt) {
  const std::string key = "invoice:" + name_;
  const Ran acquired = run({"acquire", "--raw-key", key, "-t", "10s"});
  ASSERT_EQ(acquired.code, 0) << acquired.err;
  EXPECT_EQ(get(key) + "\n", acquired.out) << "the key holds the bare token, nothing else";
  EXPECT_EQ(run({"acquire", "--raw-key", key, "-n"}).code, 1);
  const Ran status = run({"status", "--raw-key", key});
  EXPECT_EQ(status.out, key + ": held by " + get(key).substr(0, 8) + "\xe2\x80\xa6 (" +
                            status.out.substr(status.out.find('(') + 1));
  EXPECT_NE(status.out.find(" left)"), std::string::npos) << status.out;
  EXPECT_EQ(run({"release", "--raw-key", key, "--token", token_of(acquired)}).code, 0);
  EXPECT_FALSE(exists(key));
  EXPECT_EQ(run({"status", "--raw-key", key}).out, key + ": free\n");

  // run: the command's token is the key's value.
  const Ran ran = run({"run", "--raw-key", key, "--", "sh", "-c", "echo $LEASEHOLD_TOKEN"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_TRUE(is_token_line(ran.out)) << ran.out;
  EXPECT_FALSE(exists(key));

  // Another client's lock keeps it out, and is neither released nor extended by a token.
  ASSERT_EQ(server_->command({"SET", key, "0123456789abcdef0123456789abcdef", "PX", "10000"}).str,
            "OK");
  EXPECT_EQ(run({"run", "--raw-key", key, "-n", "--", "true"}).code, 1);
  EXPECT_EQ(run({"release", "--raw-key", key, "--token", "fedcba9876543210fedcba9876543210"}).code,
            1);
  EXPECT_EQ(get(key), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(run({"release", "--raw-key", key, "--force"}).code, 0);
  EXPECT_FALSE(exists(key));
}

TEST_F(CliSplitTest, WhatARawKeyCannotDoIsRefused) {
  const std::string key = "invoice:" + name_;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"acquire", "--raw-key", key, "-s"},
        {"run", "--raw-key", key, "--limit", "2", "--", "true"},
        {"acquire", "--raw-key", key, name_}}) {
    const Ran refused = run(args);
    EXPECT_EQ(refused.code, 64) << args.back();
    EXPECT_FALSE(refused.err.empty());
  }
  EXPECT_NE(run({"acquire", "--raw-key", key, "-s"}).err.find("no shared mode"), std::string::npos);
  ASSERT_EQ(server_->command({"HSET", key, "field", "1"}).integer, 1);
  const Ran wrong = run({"acquire", "--raw-key", key});
  EXPECT_EQ(wrong.code, 65);
  EXPECT_NE(wrong.err.find(key + " holds a hash"), std::string::npos) << wrong.err;
  EXPECT_FALSE(exists(writer_key()));
}

}  // namespace
}  // namespace leasehold
