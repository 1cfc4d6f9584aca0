// ClientOptions::replica_acks against a real master and its replica: grants and extends
// acknowledged by a replica (WAIT), and what happens when none acknowledges.
#include <gtest/gtest.h>

#include <chrono>
#include <leasehold/leasehold.hpp>
#include <string>

#include "eventually.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

// ClientOptions::replica_acks on one master with one replica.
class ReplicaAcks : public ::testing::Test {
 protected:
  ReplicaAcks()
      : replica_(testing::RedisServer::Options{
            {"--replicaof", "127.0.0.1", std::to_string(master_.port())}}) {
    // The replica counts for WAIT once the master has it online, which can come after the
    // replica sees its link up (the master waits for its first acknowledgement).
    EXPECT_TRUE(eventually(
        [&] {
          const std::string replica = replica_.command({"INFO", "replication"}).str;
          const std::string master = master_.command({"INFO", "replication"}).str;
          return replica.find("master_link_status:up") != std::string::npos &&
                 master.find("state=online") != std::string::npos;
        },
        10s));
  }

  static ClientOptions with_acks() {
    ClientOptions options;
    options.replica_acks = 1;
    // Enough for a replica on a loaded machine to acknowledge (one took over a second while a
    // build ran beside the suite); a paused one is waited for as long.
    options.replica_ack_timeout = 3s;
    options.command_timeout = 5s;  // longer than a WAIT
    return options;
  }

  testing::RedisServer master_;
  testing::RedisServer replica_;
};

TEST_F(ReplicaAcks, AnAcknowledgedAcquireAndExtendAreHeld) {
  Client redis(master_.tcp_url(), with_acks());
  const Lock<std::string> lock{"acks", 10s};
  auto token = redis.process(lock.try_lock("a"));
  ASSERT_TRUE(token);
  EXPECT_TRUE(redis.process(token->extend()));
  EXPECT_GE(testing::command_calls(master_, "wait"), 2);
  EXPECT_EQ(replica_.command({"GET", lock.key("a")}).str, token->value());
  EXPECT_TRUE(redis.process(token->release()));
}

TEST_F(ReplicaAcks, WithoutAcknowledgementTheAcquireFailsAndIsReleased) {
  Client redis(master_.tcp_url(), with_acks());
  const Lock<std::string> lock{"acks", 10s};
  auto held = redis.process(lock.try_lock("extended"));
  ASSERT_TRUE(held);
  replica_.pause();
  try {
    redis.process(lock.try_lock("b"));
    FAIL() << "an unacknowledged acquire succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_replicated);
    EXPECT_NE(std::string(e.what()).find("0 of 1 replicas"), std::string::npos) << e.what();
  }
  // Released: nobody holds it.
  EXPECT_TRUE(eventually([&] { return master_.command({"EXISTS", lock.key("b")}).integer == 0; }));
  // An extend is not acknowledged either.
  std::error_code ec;
  redis.process(held->extend(), ec);
  EXPECT_EQ(ec, errc::not_replicated);
  replica_.resume();
  EXPECT_TRUE(redis.process(lock.try_lock("b")));
}

TEST(ReplicaAcksOptions, AreValidated) {
  ClientOptions negative;
  negative.replica_acks = -1;
  EXPECT_THROW(Client("redis://127.0.0.1:1", negative), Error);
  ClientOptions too_long;
  too_long.replica_acks = 1;
  too_long.replica_ack_timeout = too_long.command_timeout;
  EXPECT_THROW(Client("redis://127.0.0.1:1", too_long), Error);
}

}  // namespace
}  // namespace leasehold
