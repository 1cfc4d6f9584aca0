// RwLock<N> against a real, private redis-server.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

class RwLockTest : public testing::SharedServerTest {
 protected:
  std::string prefix_ = "rw" + std::to_string(unique_number());
  RwLock<std::string> lock(std::chrono::milliseconds ttl) const {
    return RwLock<std::string>("catalog", ttl, prefix_);
  }
  long long exists(const std::string& key) const {
    return server_->command({"EXISTS", key}).integer;
  }
};

TEST_F(RwLockTest, ReadersShareAndEachHasItsOwnLease) {
  Client redis(server_->unix_url());
  const auto catalog = lock(10s);
  auto a = redis.process(catalog.try_read("books"));
  auto b = redis.process(catalog.try_read("books"));
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_NE(a->id(), b->id());
  EXPECT_EQ(server_->command({"ZCARD", catalog.readers_key("books")}).integer, 2);
}

TEST_F(RwLockTest, AReaderBlocksAWriter) {
  Client redis(server_->unix_url());
  const auto catalog = lock(10s);
  auto reader = redis.process(catalog.try_read("books"));
  ASSERT_TRUE(reader);
  EXPECT_FALSE(redis.process(catalog.try_write("books")).has_value());
  EXPECT_TRUE(redis.process(reader->release()));
  EXPECT_TRUE(redis.process(catalog.try_write("books")).has_value());
}

TEST_F(RwLockTest, AWriterBlocksReadersAndWriters) {
  Client redis(server_->unix_url());
  const auto catalog = lock(10s);
  auto writer = redis.process(catalog.try_write("books"));
  ASSERT_TRUE(writer);
  EXPECT_FALSE(redis.process(catalog.try_read("books")).has_value());
  EXPECT_FALSE(redis.process(catalog.try_write("books")).has_value());
  EXPECT_TRUE(redis.process(writer->extend()));
  EXPECT_TRUE(redis.process(writer->release()));
  EXPECT_FALSE(redis.process(writer->release()));
  EXPECT_TRUE(redis.process(catalog.try_read("books")).has_value());
}

TEST_F(RwLockTest, OneReaderReleasingLeavesTheOthers) {
  Client redis(server_->unix_url());
  const auto catalog = lock(10s);
  auto a = redis.process(catalog.try_read("books"));
  auto b = redis.process(catalog.try_read("books"));
  EXPECT_TRUE(redis.process(a->release()));
  EXPECT_FALSE(redis.process(a->release()));
  EXPECT_FALSE(redis.process(catalog.try_write("books")).has_value());
  EXPECT_TRUE(redis.process(b->extend()));
  EXPECT_TRUE(redis.process(b->release()));
  EXPECT_TRUE(redis.process(catalog.try_write("books")).has_value());
}

TEST_F(RwLockTest, AKilledReaderBlocksAWriterOnlyUntilItsLeaseEnds) {
  Client redis(server_->unix_url());
  const auto catalog = lock(300ms);
  // The reader's TTL starts when the server grants it, before a reply a busy machine may deliver
  // late: the wait is counted from before the request.
  const auto taken = Clock::now();
  auto crashed = redis.process(catalog.try_read("books"));  // never released, never extended
  ASSERT_TRUE(crashed);
  EXPECT_FALSE(redis.process(catalog.try_write("books")).has_value());
  std::optional<LockToken<RwLock<std::string>>> writer;
  ASSERT_TRUE(eventually([&] {
    writer = redis.process(catalog.try_write("books"));
    return writer.has_value();
  }));
  const auto waited = Clock::now() - taken;
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 300ms + 500ms);
}

TEST_F(RwLockTest, AReadersExtendKeepsOnlyItsOwnLease) {
  Client redis(server_->unix_url());
  const auto catalog = lock(400ms);
  auto a = redis.process(catalog.try_read("books"));
  auto b = redis.process(catalog.try_read("books"));
  const std::string key = catalog.readers_key("books");
  const auto score_of = [&](const ReadToken<RwLock<std::string>>& token) {
    return std::stod(server_->command({"ZSCORE", key, token.value()}).str);
  };
  const double b_before = score_of(*b);
  const auto server_now_ms = [&] {
    const Reply time = server_->command({"TIME"});
    return std::stod(time.elements[0].str) * 1000 + std::stod(time.elements[1].str) / 1000;
  };
  ASSERT_TRUE(eventually([&] { return server_now_ms() > score_of(*a) - 390; }));
  EXPECT_TRUE(redis.process(a->extend()));
  EXPECT_GT(score_of(*a), b_before);
  EXPECT_EQ(score_of(*b), b_before);
  // b runs out while a, extended every 50 ms, lives on.
  ASSERT_TRUE(eventually([&] {
    EXPECT_TRUE(redis.process(a->extend()));
    std::this_thread::sleep_for(50ms);  // the keep-alive's pace, not synchronisation
    return server_now_ms() > b_before;
  }));
  EXPECT_FALSE(redis.process(b->extend()));
  EXPECT_TRUE(redis.process(a->extend()));
  EXPECT_TRUE(redis.process(a->release()));
}

TEST_F(RwLockTest, ExpiredReadersArePrunedByScore) {
  Client redis(server_->unix_url());
  const auto catalog = lock(10s);
  // A reader whose lease ended long ago (score 1 ms after the epoch), left by a crash.
  server_->command({"ZADD", catalog.readers_key("books"), "1", "ghost"});
  auto live = redis.process(catalog.try_read("books"));
  ASSERT_TRUE(live);
  EXPECT_TRUE(server_->command({"ZSCORE", catalog.readers_key("books"), "ghost"}).is_nil());
  EXPECT_TRUE(redis.process(live->release()));
  EXPECT_TRUE(redis.process(catalog.try_write("books")).has_value()) << "the ghost still blocks";
}

TEST_F(RwLockTest, NoKeyOutlivesEveryLease) {
  Client redis(server_->unix_url());
  const auto catalog = lock(200ms);
  auto a = redis.process(catalog.try_read("books"));
  auto b = redis.process(catalog.try_read("books"));
  ASSERT_TRUE(a && b);
  const long long pttl = server_->command({"PTTL", catalog.readers_key("books")}).integer;
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 200);
  ASSERT_TRUE(eventually([&] { return exists(catalog.readers_key("books")) == 0; }, 2s));
  auto writer = redis.process(catalog.try_write("books"));
  ASSERT_TRUE(writer);
  ASSERT_TRUE(eventually([&] { return exists(catalog.writer_key("books")) == 0; }, 2s));
  EXPECT_EQ(exists(catalog.intent_key("books")), 0);
}

TEST_F(RwLockTest, FiftyReadersAndTwoWritersNeverOverlapAWriter) {
  const auto catalog = lock(2s);
  std::mutex mutex;
  int readers_inside = 0;
  int writers_inside = 0;
  int overlaps = 0;
  int max_readers_together = 0;
  std::atomic<int> reads{0};
  std::atomic<int> writes{0};
  const auto until = Clock::now() + 1500ms;
  auto enter = [&](bool writer) {
    std::lock_guard lock(mutex);
    if (writers_inside > 0 || (writer && readers_inside > 0))
      ++overlaps;
    (writer ? writers_inside : readers_inside)++;
    max_readers_together = std::max(max_readers_together, readers_inside);
  };
  auto leave = [&](bool writer) {
    std::lock_guard lock(mutex);
    (writer ? writers_inside : readers_inside)--;
  };
  Client readers_connection(server_->unix_url());
  std::vector<std::thread> threads;
  for (int i = 0; i < 50; ++i) {
    threads.emplace_back([&] {
      while (Clock::now() < until) {
        if (auto token = readers_connection.process(catalog.try_read("shared"))) {
          enter(false);
          std::this_thread::sleep_for(2ms);  // the critical section's work
          leave(false);
          readers_connection.process(token->release());
          ++reads;
        }
        std::this_thread::sleep_for(1ms);  // pacing between attempts
      }
    });
  }
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      Client redis(server_->unix_url());
      while (Clock::now() < until) {
        if (auto token = redis.process(catalog.try_write("shared"))) {
          enter(true);
          std::this_thread::sleep_for(2ms);
          leave(true);
          redis.process(token->release());
          ++writes;
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_GT(reads.load(), 50);
  EXPECT_GT(max_readers_together, 1) << "readers never shared the lock";
  RecordProperty("reads", reads.load());
  RecordProperty("writes", writes.load());
}

// A steady stream of overlapping readers, each holding 200 ms and starting 50 ms after the one
// before (so that a reader thread the scheduler delays by less than 150 ms leaves no gap in the
// stream, on a busy machine too), and one writer retrying every 5 ms for up to `patience`.
// Returns how long the writer waited, or nothing if it never got in.
std::optional<Clock::duration> writer_wait(const RedisServer& server,
                                           const RwLock<std::string>& catalog,
                                           Clock::duration patience) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  Client readers_connection(server.unix_url());
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * i));  // staggered starts
      while (!stop) {
        if (auto token = readers_connection.process(catalog.try_read("hot"))) {
          std::this_thread::sleep_for(200ms);  // the reader's work
          readers_connection.process(token->release());
        } else {
          std::this_thread::sleep_for(5ms);
        }
      }
    });
  }
  Client writer(server.unix_url());
  // Let the stream establish itself.
  EXPECT_TRUE(eventually([&] {
    return server.command({"ZCARD", catalog.readers_key("hot")}).integer >= 2;
  }));
  const auto start = Clock::now();
  std::optional<Clock::duration> waited;
  while (Clock::now() - start < patience) {
    if (auto token = writer.process(catalog.try_write("hot"))) {
      waited = Clock::now() - start;
      writer.process(token->release());
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  stop = true;
  for (auto& thread : readers)
    thread.join();
  return waited;
}

TEST(RwLockWriterPreference, WithoutItReadersStarveTheWriterWithItTheWriterGetsIn) {
  RedisServer server;
  const RwLock<std::string> plain("starve", 1s, "plain");
  const auto preferring = RwLock<std::string>("starve", 1s, "pref").with_writer_preference(100ms);
  const auto without = writer_wait(server, plain, 1500ms);
  const auto with = writer_wait(server, preferring, 1500ms);
  EXPECT_FALSE(without.has_value()) << "readers overlapped, yet the writer got in";
  ASSERT_TRUE(with.has_value()) << "writer preference did not let the writer in";
  // Readers already inside finish (200 ms each); new ones are refused.
  EXPECT_LT(*with, 500ms);
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); };
  std::cout << "writer's wait under a reader stream: without preference > 1500 ms (never got in),"
            << " with preference " << ms(*with).count() << " ms\n";
}

TEST(RwLockCluster, EveryKeyOfAHostileNameIsInOneSlotPerClusterKeyslot) {
  RedisServer server(
      RedisServer::Options{{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}});
  const RwLock<std::string> catalog("catalog", 10s);
  const std::vector<std::string> names = {"",  "{", "}",     "{}",       "}{",
                                          ":", "%", "a{b}c", "\xff\xfe", std::string("n\0l", 3)};
  for (const auto& name : names) {
    const auto slot = [&](const std::string& key) {
      return server.command({"CLUSTER", "KEYSLOT", key}).integer;
    };
    const long long w = slot(catalog.writer_key(name));
    EXPECT_EQ(slot(catalog.readers_key(name)), w) << name;
    EXPECT_EQ(slot(catalog.intent_key(name)), w) << name;
    EXPECT_EQ(w, key_slot(catalog.writer_key(name))) << "our CRC16 agrees with the server's";
  }
}

TEST_F(RwLockTest, ScriptsRejectClientSuppliedTimes) {
  // A caller trying to pass its own clock as an extra argument is refused, and nothing changes.
  const std::string script = detail::rw_try_read_script().body();
  const Reply reply =
      server_->command({"EVAL", script, "3", "w", "r", "i", "id", "1000", "1700000000000"});
  ASSERT_TRUE(reply.is_error());
  EXPECT_NE(reply.str.find("never from the client"), std::string::npos) << reply.str;
  EXPECT_EQ(server_->command({"EXISTS", "r"}).integer, 0);
}

TEST_F(RwLockTest, WhileHeldWorksWithReadAndWriteTokens) {
  Client redis(server_->unix_url());
  const auto catalog = lock(300ms);
  auto reader = redis.process(catalog.try_read("books"));
  ASSERT_TRUE(reader);
  const auto read_held = while_held(redis, *reader, [&](std::stop_token stop) {
    const auto until = Clock::now() + 900ms;
    while (Clock::now() < until && !stop.stop_requested()) {
      EXPECT_FALSE(redis.process(catalog.try_write("books")).has_value());
      std::this_thread::sleep_for(20ms);
    }
  });
  EXPECT_TRUE(read_held);
  EXPECT_TRUE(redis.process(reader->release()));

  auto writer = redis.process(catalog.try_write("books"));
  ASSERT_TRUE(writer);
  const auto write_held = while_held(redis, *writer, [&](std::stop_token stop) {
    const auto until = Clock::now() + 900ms;
    int refused = 0;
    while (Clock::now() < until && !stop.stop_requested()) {
      if (!redis.process(catalog.try_read("books")))
        ++refused;
      std::this_thread::sleep_for(20ms);
    }
    return refused;
  });
  ASSERT_TRUE(write_held);
  EXPECT_GT(write_held.value(), 10);
  EXPECT_TRUE(redis.process(writer->release()));
}

}  // namespace
}  // namespace leasehold
