// The leasehold command's status, list, release --force and metrics: what it shows of leases
// and holders (without their control characters), and what it removes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "cli_fixture.hpp"
#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"
#include "test_certificates.hpp"

extern char** environ;

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::CliTest;
using cli_testing::shows_no_control;
using cli_testing::stored_field;
using testing::eventually;
using testing::read_file;

TEST_F(CliTest, StatusListAndForcedReleaseShowAndRemoveLeases) {
  auto holder = cli({"--prefix", prefix_, "run", "-t", "300ms", name_, "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":RwLock:{run:" + name_ + "}:w"); }));
  auto status = cli({"--prefix", prefix_, "status", name_, "nobody"});
  EXPECT_EQ(status.wait(), 0);
  EXPECT_NE(status.out().find(name_ + ": held exclusively by "), std::string::npos) << status.out();
  EXPECT_NE(status.out().find("nobody: free"), std::string::npos);
  auto json = cli({"--prefix", prefix_, "status", "--json", name_});
  EXPECT_EQ(json.wait(), 0);
  EXPECT_NE(json.out().find("\"state\":\"exclusive\""), std::string::npos) << json.out();
  auto list = cli({"--prefix", prefix_, "list", "--json"});
  EXPECT_EQ(list.wait(), 0);
  EXPECT_NE(list.out().find("\"name\":\"" + name_ + "\""), std::string::npos) << list.out();
  auto filtered = cli({"--prefix", prefix_, "list", "nomatch*"});
  EXPECT_EQ(filtered.wait(), 0);
  EXPECT_EQ(filtered.out().find(name_), std::string::npos);
  auto refuse = cli({"--prefix", prefix_, "release", name_});
  EXPECT_EQ(refuse.wait(), 64) << "release needs --force";
  auto release = cli({"--prefix", prefix_, "release", "--force", name_});
  EXPECT_EQ(release.wait(), 0);
  EXPECT_NE(release.out().find("removed the exclusive lease"), std::string::npos) << release.out();
  EXPECT_EQ(holder.wait(), 75) << "its lease was removed behind its back";
}

// status --json is JSON whatever the name holds: quotes and backslashes escaped, bytes that are
// not UTF-8 replaced (U+FFFD), every field there for a free name.
TEST_F(CliTest, StatusJsonParsesForAnyName) {
  const std::string quoted = name_ + "\"q\\";
  const std::string not_utf8 = name_ + "\xff";
  auto status = cli({"status", "--json", quoted, not_utf8});
  ASSERT_EQ(status.wait(), 0) << status.err();
  const nlohmann::json parsed = nlohmann::json::parse(status.out());
  ASSERT_EQ(parsed.size(), 2u) << status.out();
  EXPECT_EQ(parsed[0]["name"], quoted);
  EXPECT_EQ(parsed[0]["state"], "free");
  EXPECT_TRUE(parsed[0]["writer"].is_null());
  EXPECT_TRUE(parsed[0]["readers"].empty());
  EXPECT_EQ(parsed[0]["permits"]["count"], 0);
  EXPECT_EQ(parsed[1]["name"], name_ + "\xef\xbf\xbd");
}

// Names, holders' hosts and labels, and another client's value can hold any bytes (any client can
// write a key): list, status, the refusal of a take that names the holder and release --force show
// their control characters and malformed UTF-8 as '?', and nothing else of them changes; --json
// gives them exactly, escaped.
TEST_F(CliTest, NamesAndHoldersAreShownWithoutTheirControlCharacters) {
  const std::string name = name_ + "-\x1b]0;owned\x07-\xc2\x9b[31m-\r\b_end";
  const std::string shown_name = name_ + "-?]0;owned?-?[31m-??_end";
  const std::string host = "web-\x1b[2J\xc2\x85-3";
  const std::string label = "deploy \x1b]0;pwned\x07\x9b[2J\r\bok\xff";
  const std::string shown_lease =
      "0123abcd\xe2\x80\xa6 (web-?[2J?-3, pid 4242, \"deploy ?]0;pwned??[2J??ok?\", for ";
  const long long now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::string value = "0123abcd0123abcd0123abcd0123abcd;" + stored_field(host) + ";4242;" +
                            stored_field(label) + ";" + std::to_string(now_ms);
  server_->command({"SET", prefix_ + ":RwLock:{run:" + name + "}:w", value, "PX", "60000"});

  auto list = cli({"--prefix", prefix_, "list"});
  ASSERT_EQ(list.wait(), 0) << list.err();
  EXPECT_TRUE(shows_no_control(list.out() + list.err()));
  EXPECT_EQ(list.out().find(shown_name + ": held exclusively by " + shown_lease), 0u) << list.out();
  auto status = cli({"--prefix", prefix_, "status", name});
  ASSERT_EQ(status.wait(), 0) << status.err();
  EXPECT_TRUE(shows_no_control(status.out() + status.err()));
  EXPECT_EQ(status.out().find(shown_name + ": held exclusively by " + shown_lease), 0u)
      << status.out();
  auto refused = cli({"--prefix", prefix_, "-v", "acquire", "-n", name});
  EXPECT_EQ(refused.wait(), 1) << refused.err();
  EXPECT_TRUE(shows_no_control(refused.out() + refused.err()));
  EXPECT_NE(refused.err().find("'" + shown_name + "' is held exclusively by " + shown_lease),
            std::string::npos)
      << refused.err();

  auto json = cli({"--prefix", prefix_, "list", "--json"});
  ASSERT_EQ(json.wait(), 0) << json.err();
  EXPECT_TRUE(shows_no_control(json.out())) << "escaped, C1 controls too";
  const nlohmann::json parsed = nlohmann::json::parse(json.out());
  ASSERT_EQ(parsed.size(), 1u) << json.out();
  EXPECT_EQ(parsed[0]["name"], name);
  EXPECT_EQ(parsed[0]["writer"]["holder"]["host"], host);
  EXPECT_EQ(parsed[0]["writer"]["holder"]["label"],
            "deploy \x1b]0;pwned\x07\xef\xbf\xbd[2J\r\bok\xef\xbf\xbd")
      << "bytes that are not UTF-8 are U+FFFD";

  auto release = cli({"--prefix", prefix_, "release", "--force", name});
  ASSERT_EQ(release.wait(), 0) << release.err();
  EXPECT_TRUE(shows_no_control(release.out() + release.err()));
  EXPECT_EQ(release.out(), shown_name + ": removed the exclusive lease 0123abcd\xe2\x80\xa6\n");
}

// What the command echoes in its errors — arguments CLI11 refuses, a bad duration, a key of
// another type, a raw key and the value another client put there — is shown the same way.
TEST_F(CliTest, WhatErrorsAndRawKeysEchoIsShownWithoutItsControlCharacters) {
  auto unknown = cli({"status", "--no-such\x1b]0;x\x07"});
  EXPECT_EQ(unknown.wait(), 64);
  EXPECT_TRUE(shows_no_control(unknown.out() + unknown.err()));
  EXPECT_NE(unknown.err().find("--no-such?]0;x?"), std::string::npos) << unknown.err();
  auto duration = cli({"acquire", "-t", "5\x1b[2J\xc2\x9bs", name_});
  EXPECT_EQ(duration.wait(), 64);
  EXPECT_TRUE(shows_no_control(duration.out() + duration.err()));
  EXPECT_NE(duration.err().find("--ttl: '5?[2J?s' is not a duration"), std::string::npos)
      << duration.err();

  const std::string other = name_ + "\x1b[2J\x9b";
  server_->command({"HSET", "leasehold:RwLock:{run:" + other + "}:w", "field", "value"});
  auto wrong_type = cli({"status", other});
  EXPECT_EQ(wrong_type.wait(), 65) << wrong_type.err();
  EXPECT_TRUE(shows_no_control(wrong_type.out() + wrong_type.err()));
  EXPECT_NE(wrong_type.err().find("leasehold:RwLock:{run:" + name_ + "?[2J?}:w holds a hash"),
            std::string::npos)
      << wrong_type.err();

  const std::string raw_key = name_ + ":raw\r\x1b[2J";
  server_->command({"SET", raw_key, "\x1b[2J\x07\x9bxyzuvw", "PX", "60000"});
  auto raw = cli({"status", "--raw-key", raw_key});
  EXPECT_EQ(raw.wait(), 0) << raw.err();
  EXPECT_TRUE(shows_no_control(raw.out() + raw.err()));
  EXPECT_EQ(raw.out().find(name_ + ":raw??[2J: held by ?[2J??xy\xe2\x80\xa6 ("), 0u) << raw.out();
}

// acquire --env writes a name with control characters as printf's octal escapes: none of them
// reaches a terminal that shows the lines, and a shell's eval still gets exactly the name.
TEST_F(CliTest, AcquireEnvGivesAShellExactlyANameWithControlCharacters) {
  const std::string name = name_ + "-\x1b]0;x\x07 '%s\\\xc2\x9b\n";
  const std::string key = "leasehold:RwLock:{run:" + name_ + "-\x1b]0;x\x07 '%25s\\\xc2\x9b\n}:w";
  auto acquire = cli({"acquire", "--env", name});
  ASSERT_EQ(acquire.wait(), 0) << acquire.err();
  EXPECT_TRUE(shows_no_control(acquire.out()));
  ASSERT_TRUE(exists(key));
  testing::ChildProcess script(
      {"sh", "-c", "eval \"$1\" && \"$2\" --redis \"$3\" release \"$LEASEHOLD_NAME\"", "sh",
       acquire.out(), testing::build_paths::cli, server_->unix_url()},
      server_->dir());
  EXPECT_EQ(script.wait(), 0) << "released by its token under its name: " << script.err();
  EXPECT_FALSE(exists(key));
}

// A name's key holding another type of value (something else wrote there) is named, with what it
// holds and the way out, and exits 65; `release --force` removes it, and the name works again.
TEST_F(CliTest, AKeyOfAnotherTypeIsNamedExits65AndReleaseForceRemovesIt) {
  server_->command({"HSET", writer_key(), "field", "value"});
  const std::string named = writer_key() + " holds a hash (leasehold keeps a string there)";
  auto status = cli({"status", name_});
  EXPECT_EQ(status.wait(), 65) << status.err();
  EXPECT_NE(status.err().find(named), std::string::npos) << status.err();
  EXPECT_NE(status.err().find("leasehold release --force " + name_), std::string::npos)
      << status.err();
  auto once = cli({"run", "-n", name_, "--", "true"});
  EXPECT_EQ(once.wait(), 65) << once.err();
  EXPECT_NE(once.err().find(named), std::string::npos) << once.err();
  auto waiting = cli({"run", name_, "--", "true"});
  EXPECT_EQ(waiting.wait(), 65) << waiting.err();
  EXPECT_NE(waiting.err().find(named), std::string::npos) << waiting.err();
  EXPECT_EQ(server_->command({"TYPE", writer_key()}).str, "hash") << "nothing was overwritten";

  auto release = cli({"release", "--force", name_});
  EXPECT_EQ(release.wait(), 0) << release.err();
  EXPECT_NE(release.out().find(name_ + ": removed " + writer_key() + ", which held a hash"),
            std::string::npos)
      << release.out();
  EXPECT_FALSE(exists(writer_key()));
  auto again = cli({"run", "-n", name_, "--", "true"});
  EXPECT_EQ(again.wait(), 0) << again.err();
}

// A cron job whose key holds another type of value fails every tick: it names the key and exits
// 65 instead of logging "could not reach Redis" forever; the same for an aligned job's slot key.
TEST_F(CliTest, ACronKeyOfAnotherTypeIsNamedAndExits65) {
  const std::string cron_key = "leasehold:Lock:cron:" + name_;
  server_->command({"HSET", cron_key, "field", "value"});
  auto cron = cli({"cron", "--every", "2s", name_, "--", "true"});
  EXPECT_EQ(cron.wait(), 65) << cron.err();
  EXPECT_NE(cron.err().find(cron_key + " holds a hash (leasehold keeps a string there)"),
            std::string::npos)
      << cron.err();
  EXPECT_EQ(cron.err().find("could not reach Redis"), std::string::npos) << cron.err();

  const std::string slot_key = "leasehold:Lock:{cron:" + name_ + "}:slot";
  server_->command({"RPUSH", slot_key, "item"});
  auto aligned = cli({"cron", "--aligned", "--every", "2s", name_, "--", "true"});
  EXPECT_EQ(aligned.wait(), 65) << aligned.err();
  EXPECT_NE(aligned.err().find(slot_key + " holds a list (leasehold keeps a string there)"),
            std::string::npos)
      << aligned.err();
  EXPECT_EQ(server_->command({"TYPE", slot_key}).str, "list") << "nothing was overwritten";
}

// --metrics-file: run writes what it did in the Prometheus format; cron rewrites the file after
// every tick, each time whole (a reader never sees a half-written file), and leaves no temporary
// file behind.
TEST_F(CliTest, MetricsFileHoldsTheRunsAndTicksAndIsAlwaysWhole) {
  const std::string run_metrics = file(".run.prom");
  auto run = cli({"run", "--metrics-file", run_metrics, name_, "--", "true"});
  ASSERT_EQ(run.wait(), 0) << run.err();
  const std::string after_run = read_file(run_metrics);
  EXPECT_NE(after_run.find("leasehold_acquires_total{outcome=\"acquired\"} 1\n"), std::string::npos)
      << after_run;
  EXPECT_NE(after_run.find("leasehold_releases_total{outcome=\"released\"} 1\n"), std::string::npos)
      << after_run;

  const std::string cron_metrics = file(".cron.prom");
  const std::string last_family = "# TYPE leasehold_cron_run_seconds histogram\n";
  auto cron = cli({"-q", "cron", "--every", "300ms", "--lease", "200ms", "--ticks", "3",
                   "--metrics-file", cron_metrics, name_, "--", "true"});
  int exit_code = -1;
  int partial_reads = 0;
  while ((exit_code = cron.wait(1ms)) == -1) {
    const std::string text = read_file(cron_metrics);
    if (!text.empty() && text.find(last_family) == std::string::npos)
      ++partial_reads;  // not written yet reads empty; anything else must be whole
  }
  EXPECT_EQ(exit_code, 0) << cron.err();
  EXPECT_EQ(partial_reads, 0);
  const std::string after_cron = read_file(cron_metrics);
  EXPECT_NE(
      after_cron.find("leasehold_cron_ticks_total{job=\"" + name_ + "\",outcome=\"ran\"} 3\n"),
      std::string::npos)
      << after_cron;
  EXPECT_NE(after_cron.find("leasehold_cron_run_seconds_count{job=\"" + name_ + "\"} 3\n"),
            std::string::npos)
      << after_cron;
  for (const auto& entry : std::filesystem::directory_iterator(server_->dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
        << "left behind: " << entry.path();
  auto unwritable =
      cli({"run", "--metrics-file", server_->dir() + "/no/such/dir/m.prom", name_, "--", "true"});
  EXPECT_EQ(unwritable.wait(), 0) << "the command runs all the same";
  EXPECT_NE(unwritable.err().find("--metrics-file"), std::string::npos) << unwritable.err();
}

// status and list say who holds a lease: host, pid, the command (its label), and since when.
TEST_F(CliTest, StatusNamesTheHoldersHostPidAndCommand) {
  auto holder = cli({"run", name_, "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto status = cli({"status", name_});
  ASSERT_EQ(status.wait(), 0) << status.err();
  const std::string expected =
      std::string(host) + ", pid " + std::to_string(holder.pid()) + ", \"sleep 10\", for ";
  EXPECT_NE(status.out().find(expected), std::string::npos) << status.out();
  auto json = cli({"status", "--json", name_});
  ASSERT_EQ(json.wait(), 0) << json.err();
  const nlohmann::json parsed = nlohmann::json::parse(json.out());
  const auto& who = parsed[0]["writer"]["holder"];
  EXPECT_EQ(who["host"], host) << json.out();
  EXPECT_EQ(who["pid"], holder.pid());
  EXPECT_EQ(who["label"], "sleep 10");
  EXPECT_GT(who["taken_at_ms"].get<long long>(), 0);
  auto list = cli({"list", name_});
  ASSERT_EQ(list.wait(), 0) << list.err();
  EXPECT_NE(list.out().find(expected), std::string::npos) << list.out();
  holder.signal(SIGTERM);
  holder.wait();
}

// --max-time: a command that runs past it is ended like one whose lease was lost (SIGTERM, then
// SIGKILL after --kill-after) and leasehold exits 124, as timeout(1) does; the lease is given back.
TEST_F(CliTest, MaxTimeEndsTheCommandAndExits124) {
  auto run = cli({"run", "--max-time", "300ms", name_, "--", "sleep", "10"});
  EXPECT_EQ(run.wait(), 124) << run.err();
  EXPECT_GE(run.took(), 300ms);
  EXPECT_LT(run.took(), 4s) << "sleep ends at SIGTERM";
  EXPECT_NE(run.err().find("--max-time"), std::string::npos) << run.err();
  EXPECT_FALSE(exists(writer_key()));

  auto stubborn = cli({"run", "--max-time", "300ms", "--kill-after", "300ms", name_, "--", "sh",
                       "-c", "trap '' TERM; sleep 10"});
  EXPECT_EQ(stubborn.wait(), 124) << stubborn.err();
  EXPECT_GE(stubborn.took(), 600ms);
  EXPECT_LT(stubborn.took(), 5s) << "SIGKILL after --kill-after";
  EXPECT_NE(stubborn.err().find("killed"), std::string::npos) << stubborn.err();

  auto quick = cli({"run", "--max-time", "5s", name_, "--", "true"});
  EXPECT_EQ(quick.wait(), 0) << "a command that ends in time is not touched";
  auto negative = cli({"run", "--max-time", "-1s", name_, "--", "true"});
  EXPECT_EQ(negative.wait(), 64);
}

// --max-time is the command's budget, not the lease's: a command stopped for it keeps its lease
// (extended) until its group is gone, so nobody else runs while it is still dying.
TEST_F(CliTest, ARunStoppedAtMaxTimeKeepsItsLeaseUntilItsGroupIsGone) {
  // A 200 ms TTL, SIGTERM (ignored) at 300 ms, SIGKILL 3 s later: unextended, the lease would
  // have run out by 500 ms.
  auto stubborn = cli({"run", "-t", "200ms", "--max-time", "300ms", "--kill-after", "3s", name_,
                       "--", "sh", "-c", "trap '' TERM; sleep 10"});
  ASSERT_TRUE(eventually([&] { return exists(writer_key()); }));
  const auto started = std::chrono::steady_clock::now();
  bool refused_past_ttl = false;
  // Contenders started in the first 1.2 s are done long before the SIGKILL (3.3 s): all refused.
  while (std::chrono::steady_clock::now() - started < 1200ms) {
    auto contender = cli({"run", "-n", name_, "--", "true"});
    EXPECT_EQ(contender.wait(), 1) << "the lease of a command being stopped was taken";
    refused_past_ttl = refused_past_ttl || std::chrono::steady_clock::now() - started > 700ms;
  }
  EXPECT_TRUE(refused_past_ttl);
  EXPECT_EQ(stubborn.wait(), 124) << stubborn.err();
  EXPECT_NE(stubborn.err().find("killed"), std::string::npos) << stubborn.err();
  EXPECT_FALSE(exists(writer_key())) << "given back once the group was gone";
}

// Permits in status, list and release --force; a queue of waiters is not listed as a lease.
TEST_F(CliTest, StatusAndListShowPermitsAndNotTheQueues) {
  // Both hold until the test ends them: a holder whose command ended would let the waiter in.
  auto permit = cli({"--prefix", prefix_, "run", "--limit", "2", name_, "--", "sleep", "120"});
  auto exclusive = cli({"--prefix", prefix_, "run", name_ + "x", "--", "sleep", "120"});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":RwLock:{run:" + name_ + "x}:w"); }));
  auto waiting = cli({"--prefix", prefix_, "run", name_ + "x", "--", "true"});
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":RwLock:{run:" + name_ + "x}:w:queue"); }));
  ASSERT_TRUE(eventually([&] { return exists(prefix_ + ":Semaphore:{run:" + name_ + "}:h"); }));
  auto status = cli({"--prefix", prefix_, "status", name_});
  EXPECT_EQ(status.wait(), 0);
  EXPECT_NE(status.out().find(name_ + ": 1 of 2 permits held: "), std::string::npos)
      << status.out();
  auto json = cli({"--prefix", prefix_, "status", "--json", name_});
  EXPECT_EQ(json.wait(), 0);
  EXPECT_NE(json.out().find("\"permits\":{\"count\":2,\"holders\":[{"), std::string::npos)
      << json.out();
  auto list = cli({"--prefix", prefix_, "list"});
  EXPECT_EQ(list.wait(), 0);
  EXPECT_NE(list.out().find(name_ + ": 1 of 2 permits held"), std::string::npos) << list.out();
  EXPECT_NE(list.out().find(name_ + "x: held exclusively"), std::string::npos) << list.out();
  EXPECT_EQ(list.out().find("queue"), std::string::npos) << "a queue listed as a lease";
  auto release = cli({"--prefix", prefix_, "release", "--force", name_});
  EXPECT_EQ(release.wait(), 0);
  EXPECT_NE(release.out().find("1 permit(s)"), std::string::npos) << release.out();
  EXPECT_EQ(permit.wait(), 75) << "its permit was removed behind its back";
  waiting.signal(SIGTERM);
  EXPECT_EQ(waiting.wait(), 128 + SIGTERM);
  exclusive.signal(SIGTERM);
  exclusive.wait();
}

}  // namespace
}  // namespace leasehold
