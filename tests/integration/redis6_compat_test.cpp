// A server without Redis 7's additions, as ?compat=redis6 serves it: a redis-server whose sharded
// pub/sub is taken away (rename-command), so that a SPUBLISH or an SSUBSCRIBE would fail there
// as on Redis 6. Acquires go as scripts with the reply of SET ... NX ... GET, and waiters are
// told of releases by PUBLISH and SUBSCRIBE, within a round trip or so; after a SCRIPT FLUSH the
// scripts are loaded again.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;

testing::RedisServer::Options without_sharded_pubsub() {
  testing::RedisServer::Options options;
  for (const char* command : {"SPUBLISH", "SSUBSCRIBE", "SUNSUBSCRIBE"})
    options.extra_args.insert(options.extra_args.end(), {"--rename-command", command, ""});
  return options;
}

class Redis6CompatTest : public ::testing::Test {
 protected:
  testing::RedisServer server_{without_sharded_pubsub()};
  Client redis_{"unix://" + server_.socket_path() + "?compat=redis6"};
  Lock<std::string> locks_{"compat", 30s};
};

TEST_F(Redis6CompatTest, TheServerLacksShardedPubSub) {
  const Reply reply = server_.command({"SPUBLISH", "c", "m"});
  EXPECT_TRUE(reply.is_error()) << to_string(reply);
}

TEST_F(Redis6CompatTest, AnAcquireIsOneScriptCallWithTheMeaningOfSetNxPxGet) {
  const long long evals_before = command_calls(server_, "eval");
  auto token = redis_.process(locks_.try_lock("a"));
  ASSERT_TRUE(token);
  EXPECT_EQ(read_stored_lease(server_.command({"GET", locks_.key("a")}).str).id_hex,
            token->id().hex());
  const long long pttl = server_.command({"PTTL", locks_.key("a")}).integer;
  EXPECT_GT(pttl, 25'000);
  EXPECT_LE(pttl, 30'000);
  EXPECT_FALSE(redis_.process(locks_.try_lock("a"))) << "held: refused";
  // The first loads the script (EVAL), the second calls it (EVALSHA).
  EXPECT_EQ(command_calls(server_, "eval") - evals_before, 1);
  EXPECT_EQ(command_calls(server_, "evalsha"), 1);

  EXPECT_TRUE(redis_.process(token->release()));
  EXPECT_EQ(server_.command({"EXISTS", locks_.key("a")}).integer, 0);
  EXPECT_TRUE(redis_.process(locks_.try_lock("a"))) << "free again";

  // A key of another type is refused as SET refuses it.
  server_.command({"HSET", locks_.key("h"), "f", "v"});
  try {
    redis_.process(locks_.try_lock("h"));
    ADD_FAILURE() << "a hash taken for a lock";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), make_error_code(errc::wrong_type)) << error.what();
  }
}

TEST_F(Redis6CompatTest, AfterAScriptFlushTheScriptsStandingInForCommandsAreLoadedAgain) {
  auto first = redis_.process(locks_.try_lock("f1"));
  ASSERT_TRUE(first);
  ASSERT_EQ(server_.command({"SCRIPT", "FLUSH"}).str, "OK");
  // Its EVALSHA is answered NOSCRIPT and sent again as EVAL: the caller sees only the grant.
  auto second = redis_.process(locks_.try_lock("f2"));
  ASSERT_TRUE(second);
  EXPECT_EQ(read_stored_lease(server_.command({"GET", locks_.key("f2")}).str).id_hex,
            second->id().hex());
  ASSERT_EQ(server_.command({"SCRIPT", "FLUSH"}).str, "OK");
  EXPECT_TRUE(redis_.process(first->release()));
  EXPECT_TRUE(redis_.process(second->release()));
  EXPECT_EQ(server_.command({"EXISTS", locks_.key("f1"), locks_.key("f2")}).integer, 0);
}

TEST_F(Redis6CompatTest, AReleaseTellsTheWaiterByPlainPubSubWithinARoundTripOrSo) {
  auto holder = redis_.process(locks_.try_lock("w"));
  ASSERT_TRUE(holder);
  std::optional<LockToken<Lock<std::string>>> got;
  Clock::time_point got_at;
  std::thread waiter([&] {
    got = lock_for(redis_, locks_, std::string("w"), 10s,
                   WaitOptions{.recheck = 1900ms, .ticket_ttl = 2000ms});
    got_at = Clock::now();
  });
  const std::string channel = detail::released_channel(locks_.key("w"));
  ASSERT_TRUE(eventually([&] {
    const Reply reply = server_.command({"PUBSUB", "NUMSUB", channel});
    return reply.elements.size() == 2 && reply.elements[1].integer == 1 &&
           server_.command({"ZCARD", detail::queue_key(locks_.key("w"))}).integer == 1;
  }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_LT(got_at - released_at, 300ms);  // not the recheck (1.9 s)
  EXPECT_GE(command_calls(server_, "publish"), 1);
  EXPECT_GE(command_calls(server_, "subscribe"), 1);
  EXPECT_TRUE(redis_.process(got->release()));
}

}  // namespace
}  // namespace leasehold
