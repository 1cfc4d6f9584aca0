// A Redis 6 that does not give its version (HELLO refused, as behind some proxies): the first
// SET ... NX ... GET it refuses as a syntax error switches the connection to Redis 6's forms, and
// that acquire, which did not run, is sent again as the script that stands for it. A fake peer
// plays the server.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "fake_peer.hpp"
#include "leasehold/client.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::FakePeer;
using testing::PeerAction;
using testing::PeerEvent;
namespace resp = testing::resp;

TEST(Redis6Fallback, ASyntaxErrorForNxWithGetSwitchesToTheScriptAndTheAcquireIsGranted) {
  std::mutex mutex;
  std::vector<std::string> held;  // the keys the peer's scripts set
  FakePeer peer([&](const PeerEvent& event) {
    if (event.step == 0 || event.command.empty())
      return testing::answer_like_redis(event);
    const std::string& name = event.command[0];
    if (name == "HELLO")
      return PeerAction::send(resp::error("ERR unknown command 'HELLO'"));
    if (name == "SET" && event.command.back() == "GET")
      return PeerAction::send(resp::error("ERR syntax error"));  // Redis 6.2
    if (name == "EVAL" || name == "EVALSHA") {  // the script: GET, then SET ... PX if absent
      std::lock_guard lock(mutex);
      const std::string& key = event.command[3];
      const bool taken = std::find(held.begin(), held.end(), key) != held.end();
      if (!taken)
        held.push_back(key);
      return PeerAction::send(taken ? resp::bulk("another") : resp::nil());
    }
    return testing::answer_like_redis(event);
  });
  Client client(peer.url());
  const Lock<std::string> locks("fallback", 10s);
  EXPECT_TRUE(client.process(locks.try_lock("a")));
  EXPECT_FALSE(client.process(locks.try_lock("a"))) << "held: refused, as by SET ... NX ... GET";
  EXPECT_TRUE(client.process(locks.try_lock("b")));

  std::vector<std::string> sent;
  for (const auto& command : peer.commands(0))
    if (command[0] == "SET" || command[0] == "EVAL" || command[0] == "EVALSHA")
      sent.push_back(command[0] + " " + command[command[0] == "SET" ? 1 : 3]);
  EXPECT_EQ(sent,
            (std::vector<std::string>{"SET " + locks.key("a"), "EVAL " + locks.key("a"),
                                      "EVALSHA " + locks.key("a"), "EVALSHA " + locks.key("b")}));
}

}  // namespace
}  // namespace leasehold
