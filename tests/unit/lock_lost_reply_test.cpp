// An acquire whose reply is lost: the fake peer runs the SET (it remembers the id), then drops the
// connection before answering. The client resends the retry-safe acquire on the next connection,
// where the key already holds this id: the retry must report the lock as held, never "busy".
#include <gtest/gtest.h>

#include <mutex>

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

TEST(LockLostReply, ARetryOfTheSameAcquireSeesItsOwnIdAndHoldsTheLock) {
  std::mutex mutex;
  std::string held_by;  // the fake key's value
  std::vector<std::string> ids_seen;
  FakePeer peer([&](const PeerEvent& event) {
    if (event.step == 0 || event.command.empty() || event.command[0] != "SET")
      return testing::answer_like_redis(event);
    std::lock_guard lock(mutex);
    ids_seen.push_back(event.command[2]);
    const std::string previous = held_by;
    if (held_by.empty())
      held_by = event.command[2];  // NX: set only if absent
    if (event.connection == 0)
      return PeerAction::close();  // ran, but the reply is lost
    // As Redis answers SET ... NX: with GET, the old value (nil if there was none); without GET,
    // OK if it was set, nil if not.
    if (event.command.back() == "GET")
      return PeerAction::send(previous.empty() ? resp::nil() : resp::bulk(previous));
    return PeerAction::send(previous.empty() ? resp::status("OK") : resp::nil());
  });
  ClientOptions options;
  options.command_timeout = 3s;
  options.warn_on_eviction_policy = false;  // the peer sees only the lock's commands
  Client client(peer.url(), options);
  const Lock<std::string> locks("invoice", 30s);
  const auto acquire = locks.try_lock("42");
  auto token = client.process(acquire);
  ASSERT_TRUE(token.has_value()) << "a retry reported busy for a lock its own id holds";
  EXPECT_EQ(token->id(), acquire.id());
  std::lock_guard lock(mutex);
  ASSERT_EQ(ids_seen.size(), 2u) << "the acquire was not resent on the new connection";
  EXPECT_EQ(ids_seen[0], ids_seen[1]);
  EXPECT_EQ(read_stored_lease(held_by).id_hex, acquire.id().hex());
}

TEST(LockLostReply, SomeoneElsesIdOnTheRetryIsBusy) {
  FakePeer peer([&](const PeerEvent& event) {
    if (event.step == 0 || event.command.empty() || event.command[0] != "SET")
      return testing::answer_like_redis(event);
    if (event.connection == 0)
      return PeerAction::close();
    return PeerAction::send(resp::bulk(std::string(32, 'f')));  // another holder's id
  });
  ClientOptions options;
  options.warn_on_eviction_policy = false;  // the peer sees only the lock's commands
  Client client(peer.url(), options);
  const Lock<std::string> locks("invoice", 30s);
  EXPECT_FALSE(client.process(locks.try_lock("42")).has_value());
}

}  // namespace
}  // namespace leasehold
