// ClientOptions::replica_acks against a server whose ACL refuses WAIT: the acquire fails with a
// message that names the refusal and the missing permission, and the lease it took is released.
#include <gtest/gtest.h>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::RedisServer;

TEST(ReplicaAcksRefused, AnAclWithoutWaitSaysSoAndReleasesTheAcquire) {
  RedisServer server;
  ASSERT_EQ(server.command({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "-wait"}).str,
            "OK");
  ClientOptions options;
  options.replica_acks = 1;
  options.warn_on_eviction_policy = false;
  Client redis("redis://locker:pw@127.0.0.1:" + std::to_string(server.port()), options);
  const Lock<std::string> lock("acks", 10s);
  try {
    redis.process(lock.try_lock("job"));
    FAIL() << "an acquire whose WAIT was refused succeeded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), errc::not_replicated) << what;
    EXPECT_NE(what.find("refused WAIT"), std::string::npos) << what;
    EXPECT_NE(what.find("ACL SETUSER locker +wait"), std::string::npos) << what;
    EXPECT_EQ(what.find("only 0 of"), std::string::npos) << what;
  }
  EXPECT_TRUE(eventually([&] {
    return server.command({"EXISTS", lock.key("job")}).integer == 0;
  })) << "the acquire's lease was left behind";
}

}  // namespace
}  // namespace leasehold
