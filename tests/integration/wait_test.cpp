// Waiting for a lock against a real redis-server: a release hands the lock to the waiter at the
// head within a round trip or so, a crashed holder costs its TTL and no more, waiters get the
// lock in the order they started, deadlines and stops end the wait on time and leave no place in
// the queue, and a lost subscriber connection or a restarted server only delays the hand-off.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

// A recheck long enough that a hand-off faster than it came from a notification.
constexpr WaitOptions kSlowRecheck{.recheck = 1900ms, .ticket_ttl = 2000ms};

long long queued(const testing::RedisServer& server, const std::string& lock_key) {
  return server.command({"ZCARD", detail::queue_key(lock_key)}).integer;
}

// Subscribers of the lock key's release channel at the server: sharded ones, and plain ones when
// the client sends Redis 6's forms (?compat=redis6).
long long watching(const testing::RedisServer& server, const std::string& lock_key) {
  long long count = 0;
  for (const char* kind : {"SHARDNUMSUB", "NUMSUB"}) {
    const Reply reply = server.command({"PUBSUB", kind, detail::released_channel(lock_key)});
    if (reply.elements.size() != 2)
      return -1;
    count += reply.elements[1].integer;
  }
  return count;
}

class WaitTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "w" + std::to_string(unique_number());
  Lock<std::string> locks_{"wait", 30s};
  std::string key_ = locks_.key(name_);
  Client redis_{server_->unix_url()};
};

TEST_F(WaitTest, AReleaseHandsTheLockToTheWaiterWithinARoundTripOrSo) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  std::optional<LockToken<Lock<std::string>>> got;
  Clock::time_point got_at;
  std::thread waiter([&] {
    got = lock_for(redis_, locks_, name_, 10s, kSlowRecheck);
    got_at = Clock::now();
  });
  ASSERT_TRUE(
      eventually([&] { return queued(*server_, key_) == 1 && watching(*server_, key_) == 1; }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_LT(got_at - released_at, 300ms);  // not the recheck (1.9 s)
  EXPECT_EQ(read_stored_lease(server_->command({"GET", key_}).str).id_hex, got->id().hex());
  EXPECT_TRUE(redis_.process(got->release()));
  // Nothing is left behind: no queue, no subscription.
  EXPECT_EQ(
      server_->command({"EXISTS", detail::queue_key(key_), detail::tickets_key(key_)}).integer, 0);
  EXPECT_TRUE(eventually([&] { return watching(*server_, key_) == 0; }));
}

// The release builds its channel's name from the key as same_slot_key() does, for each shape of
// key: a plain one, a hash-tagged one (fenced), braces that make no tag, braces that make one.
TEST_F(WaitTest, EveryShapeOfKeyHandsTheLockOverWithinARoundTripOrSo) {
  const Lock<std::string> fenced = locks_.with_fencing();
  for (const Lock<std::string>* lock : {&std::as_const(locks_), &fenced}) {
    for (const std::string& name : {name_, name_ + "{x", name_ + "{x}y"}) {
      SCOPED_TRACE(lock->key(name));
      auto holder = redis_.process(lock->try_lock(name));
      ASSERT_TRUE(holder);
      std::optional<LockToken<Lock<std::string>>> got;
      Clock::time_point got_at;
      std::thread waiter([&] {
        got = lock_for(redis_, *lock, name, 10s, kSlowRecheck);
        got_at = Clock::now();
      });
      const std::string key = lock->key(name);
      ASSERT_TRUE(
          eventually([&] { return queued(*server_, key) == 1 && watching(*server_, key) == 1; }));
      const Clock::time_point released_at = Clock::now();
      ASSERT_TRUE(redis_.process(holder->release()));
      waiter.join();
      ASSERT_TRUE(got);
      EXPECT_LT(got_at - released_at, 300ms);  // told, not the recheck (1.9 s)
      EXPECT_TRUE(redis_.process(got->release()));
    }
  }
}

TEST_F(WaitTest, AFreeLockIsTakenAtOnceWithoutAQueueOrASubscription) {
  const auto got = lock_for(redis_, locks_, name_, 1s);
  ASSERT_TRUE(got);
  EXPECT_EQ(server_->command({"EXISTS", detail::queue_key(key_)}).integer, 0);
  EXPECT_EQ(watching(*server_, key_), 0);
  EXPECT_TRUE(redis_.process(got->release()));
}

TEST_F(WaitTest, ACrashedHolderCostsItsTtlAndNoMore) {
  const Lock<std::string> short_lived{"wait", 400ms};
  const Clock::time_point taken_at = Clock::now();
  ASSERT_TRUE(redis_.process(short_lived.try_lock(name_)));  // never released
  const auto got = lock_for(redis_, locks_, name_, 10s, kSlowRecheck);
  const auto waited = Clock::now() - taken_at;
  ASSERT_TRUE(got);
  EXPECT_GE(waited, 390ms);
  EXPECT_LT(waited, 400ms + 300ms);  // at the holder's expiry, not at the recheck
  EXPECT_TRUE(redis_.process(got->release()));
}

TEST_F(WaitTest, WaitersGetTheLockInTheOrderTheyStarted) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  constexpr int kWaiters = 10;
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto token = lock_for(redis_, locks_, name_, 20s);
      ASSERT_TRUE(token);
      {
        std::lock_guard lock(mutex);
        order.push_back(i);
      }
      EXPECT_TRUE(redis_.process(token->release()));
    });
    // Started 20 ms apart, and each in the queue before the next starts.
    ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == i + 1; }));
    std::this_thread::sleep_for(20ms);  // the spacing under test, not a synchronisation
  }
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  for (auto& waiter : waiters)
    waiter.join();
  std::vector<int> expected;
  for (int i = 0; i < kWaiters; ++i)
    expected.push_back(i);
  EXPECT_EQ(order, expected);
  EXPECT_LT(Clock::now() - released_at, 3s);  // ten hand-offs, each told
}

TEST_F(WaitTest, ADeadlineEndsTheWaitOnTimeAndLeavesTheQueue) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  const Clock::time_point start = Clock::now();
  const auto got = lock_for(redis_, locks_, name_, 300ms);
  const auto waited = Clock::now() - start;
  EXPECT_FALSE(got);
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 300ms + 300ms);
  EXPECT_TRUE(eventually([&] { return queued(*server_, key_) == 0; }));
  EXPECT_TRUE(eventually([&] { return watching(*server_, key_) == 0; }));
  EXPECT_TRUE(redis_.process(holder->release()));
}

TEST_F(WaitTest, AStopTokenEndsTheWaitAtOnce) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  std::stop_source stop;
  std::optional<LockToken<Lock<std::string>>> got;
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    got = lock_until(redis_, locks_, name_, Clock::time_point::max(), {}, stop.get_token());
    returned = true;
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  const Clock::time_point stopped_at = Clock::now();
  stop.request_stop();
  ASSERT_TRUE(eventually([&] { return returned.load(); }, 1s));
  EXPECT_LT(Clock::now() - stopped_at, 300ms);
  waiter.join();
  EXPECT_FALSE(got);
  EXPECT_TRUE(eventually([&] { return queued(*server_, key_) == 0; }));
  EXPECT_TRUE(redis_.process(holder->release()));
}

TEST_F(WaitTest, ACancelledAsyncWaitLeavesNoTicketBehind) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  asio::io_context io;
  Client async_redis(io.get_executor(), server_->unix_url());
  asio::cancellation_signal cancel;
  std::optional<std::error_code> outcome;
  async_lock_until(async_redis, locks_, name_, Clock::time_point::max(),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::error_code ec, auto token) {
                     outcome = ec;
                     EXPECT_FALSE(token);
                   }));
  std::thread runner([&] { io.run(); });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  asio::post(io, [&] { cancel.emit(asio::cancellation_type::terminal); });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 0; }));
  ASSERT_TRUE(eventually([&] { return watching(*server_, key_) == 0; }));
  asio::post(io, [&] { async_redis.close(); });  // its connections keep io.run() going
  runner.join();
  ASSERT_TRUE(outcome);
  EXPECT_EQ(*outcome, asio::error::operation_aborted);
  EXPECT_EQ(watching(*server_, key_), 0);
  EXPECT_TRUE(redis_.process(holder->release()));
}

TEST_F(WaitTest, AWaiterThatLacksTheRightToSubscribeStillGetsTheLockAtTheRecheck) {
  server_->command({"ACL", "SETUSER", "nochannels", "on", ">pw", "~*", "resetchannels", "+@all"});
  Client limited("unix://nochannels:pw@" + server_->socket_path());
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  std::optional<LockToken<Lock<std::string>>> got;
  Clock::time_point got_at;
  std::thread waiter([&] {
    got = lock_for(limited, locks_, name_, 10s, {.recheck_unwatched = 300ms});
    got_at = Clock::now();
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_LT(got_at - released_at, 300ms + 300ms);
  EXPECT_TRUE(limited.process(got->release()));
}

// 50 waiters of one client, on one subscriber connection that is killed while they wait: all get
// the lock, one after the other, told of each release after it resubscribed.
TEST_F(WaitTest, AKilledSubscriberConnectionOnlyDelaysTheHandOff) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  asio::io_context io;
  Client async_redis(io.get_executor(), server_->unix_url());
  constexpr int kWaiters = 50;
  std::atomic<int> granted{0};
  std::atomic<int> released{0};
  for (int i = 0; i < kWaiters; ++i) {
    async_lock_until(async_redis, locks_, name_, Clock::now() + 20s,
                     [&](std::error_code ec, auto token) {
                       ASSERT_FALSE(ec) << ec.message();
                       ASSERT_TRUE(token);
                       ++granted;
                       async_redis.async_process(token->release(), [&](std::error_code e, bool ok) {
                         EXPECT_TRUE(!e && ok);
                         ++released;
                       });
                     });
  }
  std::thread runner([&] { io.run(); });
  ASSERT_TRUE(eventually(
      [&] { return queued(*server_, key_) == kWaiters && watching(*server_, key_) == 1; }));
  EXPECT_EQ(server_->command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1);
  const Clock::time_point released_at = Clock::now();
  ASSERT_TRUE(redis_.process(holder->release()));
  ASSERT_TRUE(eventually([&] { return released.load() == kWaiters; }, 10s));
  EXPECT_EQ(granted.load(), kWaiters);
  EXPECT_LT(Clock::now() - released_at, 5s);
  EXPECT_TRUE(eventually([&] { return watching(*server_, key_) == 0; }));
  asio::post(io, [&] { async_redis.close(); });  // its connections keep io.run() going
  runner.join();
}

class RwWaitTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "rw" + std::to_string(unique_number());
  RwLock<std::string> locks_{"wait", 30s};
  std::string key_ = locks_.writer_key(name_);
  Client redis_{server_->unix_url()};
};

// The queue: R1, R2, W2, R3 behind a writer. Its release lets R1 and R2 in together (one
// message names both); W2 waits for them, R3 for W2 (a reader never passes a queued writer).
TEST_F(RwWaitTest, ReadersQueuedTogetherGetInTogetherAndNoReaderPassesAQueuedWriter) {
  auto writer = redis_.process(locks_.try_write(name_));
  ASSERT_TRUE(writer);
  std::mutex mutex;
  std::vector<std::string> order;
  const auto log = [&](const std::string& who) {
    std::lock_guard lock(mutex);
    order.push_back(who);
  };
  std::atomic<bool> readers_done{false};
  std::vector<std::thread> waiters;
  const auto deadline = Clock::now() + 10s;
  const auto reader = [&](const std::string& who) {
    return std::thread([&, who] {
      auto token = read_until(redis_, locks_, name_, deadline, kSlowRecheck);
      ASSERT_TRUE(token) << who;
      log(who);
      if (who != "R3") {
        ASSERT_TRUE(eventually([&] { return readers_done.load(); }));
      }
      EXPECT_TRUE(redis_.process(token->release())) << who;
    });
  };
  waiters.push_back(reader("R1"));
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  waiters.push_back(reader("R2"));
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 2; }));
  waiters.emplace_back([&] {
    auto token = write_until(redis_, locks_, name_, deadline, kSlowRecheck);
    ASSERT_TRUE(token);
    log("W2");
    EXPECT_TRUE(redis_.process(token->release()));
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 3; }));
  waiters.push_back(reader("R3"));
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 4; }));
  const auto released_at = Clock::now();
  ASSERT_TRUE(redis_.process(writer->release()));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    return order.size() == 2;
  }));
  EXPECT_LT(Clock::now() - released_at, 1s) << "the readers were not told of the release";
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(std::set<std::string>(order.begin(), order.end()),
              (std::set<std::string>{"R1", "R2"}));
  }
  readers_done = true;  // the last reader's release tells W2, whose release tells R3
  for (auto& waiter : waiters)
    waiter.join();
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[2], "W2");
  EXPECT_EQ(order[3], "R3");
  EXPECT_LT(Clock::now() - released_at, 1500ms) << "a hand-off waited for the recheck";
  EXPECT_EQ(queued(*server_, key_), 0);
}

// Readers that do not queue (try_read) cannot starve a queued writer: its intent keeps them out
// from the moment it is at the head, and goes when it gives up.
TEST_F(RwWaitTest, AQueuedWriterKeepsNewReadersOutUntilItGetsInOrGivesUp) {
  auto first = redis_.process(locks_.try_read(name_));
  ASSERT_TRUE(first);
  std::stop_source stop;
  std::optional<LockToken<RwLock<std::string>>> got;
  std::thread writer([&] {
    got = write_until(redis_, locks_, name_, Clock::now() + 10s, kSlowRecheck, stop.get_token());
  });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  EXPECT_FALSE(redis_.process(locks_.try_read(name_))) << "a reader passed the queued writer";
  stop.request_stop();
  writer.join();
  EXPECT_FALSE(got);
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 0; }));  // left, without a wait
  auto later = redis_.process(locks_.try_read(name_));
  EXPECT_TRUE(later) << "the writer's intent outlived its wait";
  EXPECT_TRUE(redis_.process(first->release()));
  if (later) {
    EXPECT_TRUE(redis_.process(later->release()));
  }
}

TEST_F(RwWaitTest, AForcedReleaseTellsTheWaiter) {
  ASSERT_TRUE(redis_.process(locks_.try_read(name_)));
  std::optional<LockToken<RwLock<std::string>>> got;
  std::thread waiter(
      [&] { got = write_until(redis_, locks_, name_, Clock::now() + 10s, kSlowRecheck); });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  const auto released_at = Clock::now();
  // The reader's set, and the intent of the writer waiting at the head.
  EXPECT_EQ(redis_.process(locks_.force_release(name_)), 2);
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_LT(Clock::now() - released_at, 1s);
  EXPECT_TRUE(redis_.process(got->release()));
}

TEST_F(RwWaitTest, ACancelledAsyncWriteWaitLeavesTheQueue) {
  ASSERT_TRUE(redis_.process(locks_.try_read(name_)));
  asio::io_context io;
  Client async_redis(io.get_executor(), server_->unix_url());
  asio::cancellation_signal cancel;
  std::optional<std::error_code> outcome;
  async_write_until(
      async_redis, locks_, name_, Clock::time_point::max(), WaitOptions{},
      asio::bind_cancellation_slot(cancel.slot(), [&](std::error_code ec, auto token) {
        outcome = ec;
        EXPECT_FALSE(token);
      }));
  std::thread runner([&] { io.run(); });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 1; }));
  asio::post(io, [&] { cancel.emit(asio::cancellation_type::terminal); });
  ASSERT_TRUE(eventually([&] { return queued(*server_, key_) == 0; }));
  ASSERT_TRUE(eventually([&] { return watching(*server_, key_) == 0; }));
  asio::post(io, [&] { async_redis.close(); });
  runner.join();
  EXPECT_EQ(outcome, asio::error::operation_aborted);
}

TEST(WaitOnARestartedServer, TheWaiterGetsTheLockAfterTheServerIsBack) {
  testing::RedisServer server;
  const Lock<std::string> locks{"wait", 30s};
  ClientOptions options;
  options.command_timeout = 500ms;
  Client redis(server.unix_url(), options);
  ASSERT_TRUE(redis.process(locks.try_lock("job")));  // lost with the restart
  std::optional<LockToken<Lock<std::string>>> got;
  std::thread waiter([&] { got = lock_for(redis, locks, std::string("job"), 20s); });
  ASSERT_TRUE(eventually([&] { return queued(server, locks.key("job")) == 1; }));
  server.stop();
  server.start();  // empty: the lock is free, and the queue is gone
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(read_stored_lease(server.command({"GET", locks.key("job")}).str).id_hex,
            got->id().hex());
}

// A kind of lease that the library does not know, as a new kind would be added: its turn
// contract and its script, and nothing else. Its lease (a plain key holding the waiter's value)
// may only be taken while a gate key exists; it keeps no queue, so its waiters poll.
class GatedTurn final : public detail::TurnContract {
 public:
  GatedTurn(std::string key, std::string gate) : key_(std::move(key)), gate_(std::move(gate)) {}

  const std::string& key() const noexcept override { return key_; }
  bool queued() const noexcept override { return false; }
  Request try_request(const detail::Waiter& waiter) const override {
    // KEYS[1] the lease, KEYS[2] the gate; ARGV[1] the waiter's value, ARGV[2] the TTL in ms
    // -> 1 held by this waiter (now, or already), 0 refused.
    static const Script script(
        "if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end\n"
        "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end\n"
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end\n"
        "return 0\n");
    const std::string_view keys[] = {key_, gate_};
    const std::string_view args[] = {waiter.value, "30000"};
    return Request::script(script, keys, args).retry_safe().grants_lease();
  }
  Result<detail::TurnOutcome> parse_try(const Reply& reply, const Timing& timing,
                                        const detail::Waiter& waiter) const override {
    if (reply.type != Reply::Type::integer)
      return Result<detail::TurnOutcome>(make_error_code(errc::unexpected_reply), to_string(reply));
    if (reply.integer == 0)
      return detail::TurnOutcome{};
    return detail::TurnOutcome{
        std::make_shared<detail::LeaseState>(key_, waiter.id, 30s, lease_deadline(timing.sent, 30s),
                                             &detail::kLockLease, std::string(), waiter.value),
        {}};
  }
  Request release_request(const detail::Waiter& waiter) const override {
    return detail::lock_release_request(key_, waiter.value);
  }
  std::optional<Request> keep_place_request(const detail::Waiter&,
                                            std::chrono::system_clock::time_point) const override {
    return std::nullopt;
  }
  std::optional<Request> leave_request(const detail::Waiter&) const override {
    return std::nullopt;
  }

 private:
  std::string key_;
  std::string gate_;
};

TEST_F(WaitTest, AKindTheLibraryDoesNotKnowIsWaitedForByItsTurnContractAlone) {
  struct Gated {};
  const auto turn =
      detail::TurnAccess::make<LockToken<Gated>>(std::make_shared<GatedTurn>(key_, key_ + ":gate"));
  const long long tries_before = testing::command_calls(*server_, "evalsha");
  std::optional<LockToken<Gated>> got;
  std::thread waiter([&] { got = wait_until(redis_, turn, Clock::now() + 10s, {.poll = 20ms}); });
  ASSERT_TRUE(eventually([&] {
    return testing::command_calls(*server_, "evalsha") >= tries_before + 2;
  })) << "the waiter tries again and again";
  EXPECT_FALSE(server_->command({"EXISTS", key_}).integer) << "taken while the gate was closed";
  server_->command({"SET", key_ + ":gate", "open"});
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(server_->command({"GET", key_}).str, got->value());
  EXPECT_TRUE(redis_.process(got->release())) << "released by the kind's LeaseKind";
  EXPECT_FALSE(server_->command({"EXISTS", key_}).integer);
}

TEST(WaitOptionsTest, ARecheckThatWouldLetTheTicketRunOutIsAnError) {
  testing::RedisServer server;
  Client redis(server.unix_url());
  const Lock<std::string> locks{"wait", 30s};
  try {
    lock_for(redis, locks, std::string("x"), 1s, {.recheck = 2s, .ticket_ttl = 2s});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("shorter than the ticket TTL"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace leasehold
