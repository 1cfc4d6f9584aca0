// Lock<N> and while_held against a real, private redis-server.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <future>
#include <random>
#include <thread>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis6_forms.hpp"
#include "redis_server.hpp"
#include "rethrow.hpp"
#include "scripts.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::command_calls;
using testing::eventually;
using testing::RedisServer;

class LockTest : public testing::SharedServerTest {
 protected:
  // Every test has its own key prefix, so tests never see each other's locks.
  std::string prefix_ = "lh" + std::to_string(unique_number());
  Lock<std::string> lock(std::chrono::milliseconds ttl) const {
    return Lock<std::string>("test", ttl, prefix_);
  }
  long long pttl(const std::string& key) const { return server_->command({"PTTL", key}).integer; }
};

TEST_F(LockTest, OnlyOneOfTwoConnectionsGetsTheLock) {
  Client a(server_->unix_url());
  Client b(server_->tcp_url());
  const auto invoices = lock(30s);
  auto first = a.process(invoices.try_lock("inv-1"));
  auto second = b.process(invoices.try_lock("inv-1"));
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(second.has_value());
  EXPECT_EQ(server_->command({"GET", invoices.key("inv-1")}).str, first->value());
  // Another name is free.
  EXPECT_TRUE(b.process(invoices.try_lock("inv-2")).has_value());
  // After the release, the other connection gets it.
  EXPECT_TRUE(a.process(first->release()));
  EXPECT_TRUE(b.process(invoices.try_lock("inv-1")).has_value());
}

TEST_F(LockTest, ReleaseAndExtendAreTrueWhileHeld) {
  Client redis(server_->unix_url());
  const auto locks = lock(10s);
  auto token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(token);
  EXPECT_TRUE(redis.process(token->extend()));
  EXPECT_TRUE(redis.process(token->release()));
  EXPECT_EQ(server_->command({"EXISTS", locks.key("n")}).integer, 0);
  // A second release finds nothing: false, and nothing else happens.
  EXPECT_FALSE(redis.process(token->release()));
  EXPECT_FALSE(redis.process(token->extend()));
}

// The TTLs below are short so that the tests wait little for an expiry, but long enough that an
// acquire's reply on a loaded machine (ASan, other suites) comes before the lease's client-side
// deadline: a later one is refused as "granted after its deadline", as it must be.
TEST_F(LockTest, AfterExpiryReleaseAndExtendAreFalseAndExtendNeverResurrects) {
  Client redis(server_->unix_url());
  const auto locks = lock(400ms);
  auto token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(token);
  ASSERT_TRUE(eventually([&] {
    return server_->command({"EXISTS", locks.key("n")}).integer == 0;
  }));
  EXPECT_FALSE(redis.process(token->extend()));
  EXPECT_EQ(server_->command({"EXISTS", locks.key("n")}).integer, 0) << "extend resurrected it";
  EXPECT_FALSE(redis.process(token->release()));
}

TEST_F(LockTest, AfterATakeoverTheOldTokenCannotTouchTheNewHolder) {
  Client redis(server_->unix_url());
  const auto locks = lock(400ms);
  auto old_token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(old_token);
  std::optional<LockToken<Lock<std::string>>> new_token;
  ASSERT_TRUE(eventually([&] {
    new_token = redis.process(locks.try_lock("n"));
    return new_token.has_value();
  }));
  ASSERT_TRUE(redis.process(new_token->extend()));  // now held for another 400 ms at least
  const long long ttl_before = pttl(locks.key("n"));
  EXPECT_FALSE(redis.process(old_token->extend()));
  EXPECT_FALSE(redis.process(old_token->release()));
  EXPECT_EQ(server_->command({"GET", locks.key("n")}).str, new_token->value());
  EXPECT_LE(pttl(locks.key("n")), ttl_before) << "the old token's extend touched the new lease";
}

// The scripts were flushed, and the release's script loaded again (by another client) before
// the extend's: an extend sent before a release is answered NOSCRIPT while the release runs. Sent
// again, the extend would run after the release its caller made later; it fails instead.
TEST_F(LockTest, AfterAScriptFlushAnExtendSentBeforeAReleaseNeverRunsAfterIt) {
  Client redis(server_->unix_url());
  const auto locks = lock(10s);
  auto token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(token);
  auto other = redis.process(locks.try_lock("other"));  // its calls load both scripts
  ASSERT_TRUE(other && redis.process(other->extend()) && redis.process(other->release()));
  ASSERT_EQ(server_->command({"SCRIPT", "FLUSH"}), Reply::make_status("OK"));
  // The release's script, as this client sends it (Redis 6 mode publishes plainly).
  std::string release = detail::lock_release_script().body();
  if (RedisUrl::parse(server_->unix_url()).compat == RedisUrl::Compat::redis6)
    release = *detail::with_plain_publish(release);
  server_->command({"SCRIPT", "LOAD", release});
  // Paused, Redis holds both calls until they are both in flight.
  ASSERT_EQ(server_->command({"CLIENT", "PAUSE", "200", "ALL"}), Reply::make_status("OK"));
  std::promise<std::error_code> extended;
  std::promise<bool> released;
  redis.async_process(token->extend(), [&](std::error_code ec, bool) { extended.set_value(ec); });
  redis.async_process(token->release(),
                      [&](std::error_code ec, bool done) { released.set_value(!ec && done); });
  EXPECT_TRUE(released.get_future().get());
  const std::error_code extend_error = extended.get_future().get();
  EXPECT_EQ(extend_error, errc::no_script) << extend_error.message();
  EXPECT_EQ(server_->command({"EXISTS", locks.key("n")}).integer, 0);
}

TEST_F(LockTest, PttlFollowsAcquireAndExtend) {
  Client redis(server_->unix_url());
  const auto locks = lock(30s);
  auto token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(token);
  const long long after_acquire = pttl(locks.key("n"));
  EXPECT_GT(after_acquire, 29'000);
  EXPECT_LE(after_acquire, 30'000);
  server_->command({"PEXPIRE", locks.key("n"), "5000"});  // age it
  EXPECT_TRUE(redis.process(token->extend()));
  const long long after_extend = pttl(locks.key("n"));
  EXPECT_GT(after_extend, 29'000);
  EXPECT_LE(after_extend, 30'000);
  // The client-side deadline is inside the server's lease.
  EXPECT_LE(token->valid_for(), std::chrono::milliseconds(after_extend));
  EXPECT_GT(token->valid_for(), 29s);
}

TEST_F(LockTest, ForgedAndBitFlippedTokensNeverReleaseOrExtendAHeldLock) {
  Client redis(server_->unix_url());
  const auto locks = lock(60s);
  auto token = redis.process(locks.try_lock("guarded"));
  ASSERT_TRUE(token);
  const std::string key = locks.key("guarded");
  std::mt19937_64 random(12345);  // test data, not tokens
  constexpr int kBatches = 100;
  constexpr int kPerBatch = 1000;  // 100 000 forged tokens in all
  for (int b = 0; b < kBatches; ++b) {
    std::vector<ReleaseLock<Lock<std::string>>> releases;
    std::vector<ExtendLock<Lock<std::string>>> extends;
    for (int i = 0; i < kPerBatch; ++i) {
      LeaseId forged;
      if (i % 2 == 0) {
        forged = LeaseId::generate();
      } else {
        // The real id with one bit flipped.
        auto bytes = token->id().bytes();
        const auto bit = random() % 128;
        bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        std::string hex;
        for (auto byte : bytes) {
          static constexpr char kHex[] = "0123456789abcdef";
          hex += kHex[byte >> 4];
          hex += kHex[byte & 0xf];
        }
        forged = LeaseId::from_hex(hex);
      }
      auto state = std::make_shared<detail::LeaseState>(key, forged, 60s, Clock::now());
      if (i % 4 < 2)
        releases.emplace_back(state);
      else
        extends.emplace_back(state);
    }
    for (const auto& result : redis.process(releases))
      ASSERT_FALSE(result.value());
    for (const auto& result : redis.process(extends))
      ASSERT_FALSE(result.value());
  }
  EXPECT_EQ(server_->command({"GET", key}).str, token->value());
  EXPECT_TRUE(redis.process(token->release()));
}

TEST_F(LockTest, RetryingTheSameAcquireAfterALostReplyStillHoldsTheLock) {
  Client redis(server_->unix_url());
  const auto locks = lock(30s);
  const auto acquire = locks.try_lock("n");
  auto first = redis.process(acquire);  // imagine this reply lost on the way
  ASSERT_TRUE(first);
  auto retry = redis.process(acquire);  // the same query, the same id
  ASSERT_TRUE(retry.has_value()) << "a retry must never report busy for a lock it holds";
  EXPECT_EQ(retry->id(), first->id());
  // Someone else's acquire is still refused.
  EXPECT_FALSE(redis.process(locks.try_lock("n")).has_value());
}

TEST_F(LockTest, AnAcquireWithAnUnknownOutcomeIsAnErrorAndLeavesNoLease) {
  RedisServer server;
  ClientOptions options;
  options.command_timeout = 200ms;
  Client redis(server.unix_url(), options);
  redis.connect();
  const auto locks = Lock<std::string>("test", 60s);
  server.pause();  // the SET is sent but not answered in time
  std::error_code ec;
  auto token = redis.process(locks.try_lock("n"), ec);
  EXPECT_EQ(ec, errc::command_timeout);
  EXPECT_FALSE(token.has_value());
  server.resume();
  // The server then runs the SET; the client's best-effort release removes it long before the
  // 60 s TTL would.
  EXPECT_TRUE(eventually([&] { return server.command({"EXISTS", locks.key("n")}).integer == 0; }));
  EXPECT_TRUE(redis.process(locks.try_lock("n")).has_value());
}

TEST_F(LockTest, HostileNamesAreLockableAndExclusive) {
  Client a(server_->unix_url());
  Client b(server_->unix_url());
  const auto locks = lock(30s);
  const std::vector<std::string> names = {
      "",    std::string(1 << 20, 'x'), std::string("nul\0inside", 10), "{", "}", "{tag}", ":",
      "a:b", "\xff\xfe\x80 not utf-8"};
  for (const auto& name : names) {
    auto token = a.process(locks.try_lock(name));
    ASSERT_TRUE(token) << "name of size " << name.size();
    EXPECT_FALSE(b.process(locks.try_lock(name)).has_value());
    EXPECT_EQ(server_->command({"GET", locks.key(name)}).str, token->value());
  }
  // Each name has a key of its own.
  EXPECT_EQ(server_->command({"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", prefix_ + ":*"})
                .integer,
            static_cast<long long>(names.size()));
}

TEST_F(LockTest, AKeyOfAnotherTypeIsAClearErrorForEveryOperation) {
  Client redis(server_->unix_url());
  const auto locks = lock(30s);
  server_->command({"RPUSH", locks.key("n"), "not a lock"});
  try {
    redis.process(locks.try_lock("n"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::wrong_type);
    EXPECT_NE(std::string(e.what()).find("another type"), std::string::npos) << e.what();
  }
  auto state =
      std::make_shared<detail::LeaseState>(locks.key("n"), LeaseId::generate(), 30s, Clock::now());
  std::error_code ec;
  redis.process(ReleaseLock<Lock<std::string>>(state), ec);
  EXPECT_EQ(ec, errc::wrong_type);
  redis.process(ExtendLock<Lock<std::string>>(state), ec);
  EXPECT_EQ(ec, errc::wrong_type);
  EXPECT_EQ(server_->command({"TYPE", locks.key("n")}).str, "list") << "nothing was changed";
}

TEST_F(LockTest, ReleasingAHundredTokensIsOneBatch) {
  Client redis(server_->unix_url());
  const auto locks = lock(30s);
  std::vector<TryLock<Lock<std::string>>> acquires;
  for (int i = 0; i < 100; ++i)
    acquires.push_back(locks.try_lock("n" + std::to_string(i)));
  auto tokens = redis.process(acquires);
  std::vector<ReleaseLock<Lock<std::string>>> releases;
  for (auto& token : tokens)
    releases.push_back(token.value()->release());
  const auto released = redis.process(releases);
  ASSERT_EQ(released.size(), 100u);
  for (const auto& result : released)
    EXPECT_TRUE(result.value());
}

TEST_F(LockTest, AsyncAcquireAndReleaseFromCoroutines) {
  asio::io_context io;
  Client redis(io.get_executor(), server_->unix_url());
  const auto locks = lock(30s);
  int granted = 0;
  int busy = 0;
  int done = 0;
  for (int i = 0; i < 50; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          const auto acquire = locks.try_lock("shared");
          auto token = co_await redis.async_process(acquire, asio::use_awaitable);
          if (token)
            ++granted;
          else
            ++busy;
          if (++done == 50)
            redis.close();
        },
        testing::rethrow_failure);
  }
  io.run_for(30s);
  EXPECT_EQ(granted, 1);
  EXPECT_EQ(busy, 49);
}

TEST_F(LockTest, WhileHeldKeepsTheLeaseForWorkThreeTimesLongerThanTheTtl) {
  Client redis(server_->unix_url());
  Client contender(server_->unix_url());
  const auto locks = lock(300ms);
  auto token = redis.process(locks.try_lock("job"));
  ASSERT_TRUE(token);
  std::atomic<int> contender_wins{0};
  const auto held = while_held(redis, *token, [&](std::stop_token stop) {
    const auto until = Clock::now() + 900ms;
    int attempts = 0;
    while (Clock::now() < until && !stop.stop_requested()) {
      if (contender.process(locks.try_lock("job")).has_value())
        ++contender_wins;
      ++attempts;
      std::this_thread::sleep_for(10ms);  // the work itself: a paced loop, not synchronisation
    }
    return attempts;
  });
  ASSERT_TRUE(held) << "lost: " << held.loss_cause().message();
  EXPECT_GT(held.value(), 10);
  EXPECT_EQ(contender_wins.load(), 0);
  EXPECT_FALSE(token->expired());
  EXPECT_TRUE(redis.process(token->release()));
}

TEST_F(LockTest, WhileHeldReportsALossSoonAfterTheKeyIsDeletedBehindItsBack) {
  Client redis(server_->unix_url());
  const auto locks = lock(300ms);
  auto token = redis.process(locks.try_lock("job"));
  ASSERT_TRUE(token);
  Clock::time_point deleted_at;
  Clock::time_point stopped_at;
  const auto held = while_held(redis, *token, [&](std::stop_token stop) {
    server_->command({"DEL", locks.key("job")});
    deleted_at = Clock::now();
    const auto give_up = Clock::now() + 5s;
    while (!stop.stop_requested() && Clock::now() < give_up)
      std::this_thread::sleep_for(1ms);
    stopped_at = Clock::now();
  });
  EXPECT_TRUE(held.was_lost());
  EXPECT_FALSE(held.loss_cause()) << "expired or taken over, not an error";
  // ttl/3 until the next extension, plus one round trip (generous for a loaded 2-core machine).
  EXPECT_LT(stopped_at - deleted_at, 100ms + 150ms);
  EXPECT_THROW(held.value(), Error);
}

TEST_F(LockTest, WhileHeldDeclaresTheLeaseLostAtItsDeadlineWhenRedisIsUnreachable) {
  RedisServer server;
  ClientOptions options;
  options.command_timeout = 100ms;
  Client redis(server.unix_url(), options);
  const auto locks = Lock<std::string>("test", 400ms);
  auto token = redis.process(locks.try_lock("job"));
  ASSERT_TRUE(token);
  Clock::time_point stopped_at;
  const auto held = while_held(redis, *token, [&](std::stop_token stop) {
    server.pause();
    const auto give_up = Clock::now() + 5s;
    while (!stop.stop_requested() && Clock::now() < give_up)
      std::this_thread::sleep_for(1ms);
    stopped_at = Clock::now();
    server.resume();
  });
  EXPECT_TRUE(held.was_lost());
  EXPECT_EQ(held.loss_cause(), errc::command_timeout) << held.loss_cause().message();
  // Never later than the deadline (plus scheduling slack), never long before it.
  EXPECT_GE(stopped_at, token->deadline());
  EXPECT_LT(stopped_at - token->deadline(), 150ms);
}

TEST_F(LockTest, AsyncWhileHeldCancelsTheWorkWhenTheLeaseIsLost) {
  asio::io_context io;
  Client redis(io.get_executor(), server_->unix_url());
  const auto locks = lock(300ms);
  std::optional<Held<int>> outcome;
  bool work_finished_normally = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const auto acquire = locks.try_lock("async-job");
        auto token = co_await redis.async_process(acquire, asio::use_awaitable);
        if (!token)
          co_return;
        auto work = [&]() -> asio::awaitable<int> {
          server_->command({"DEL", locks.key("async-job")});
          asio::steady_timer long_step(co_await asio::this_coro::executor, 10s);
          co_await long_step.async_wait(asio::use_awaitable);  // cancelled on loss
          work_finished_normally = true;
          co_return 1;
        };
        outcome = co_await async_while_held(redis, *token, work());
        redis.close();
      },
      testing::rethrow_failure);
  const auto start = Clock::now();
  io.run_for(20s);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->was_lost());
  EXPECT_FALSE(work_finished_normally);
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST_F(LockTest, AsyncWhileHeldReturnsTheWorksResultWhenHeld) {
  asio::io_context io;
  Client redis(io.get_executor(), server_->unix_url());
  const auto locks = lock(200ms);
  std::optional<Held<std::string>> outcome;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const auto acquire = locks.try_lock("async-ok");
        auto token = co_await redis.async_process(acquire, asio::use_awaitable);
        if (!token)
          co_return;
        auto work = []() -> asio::awaitable<std::string> {
          asio::steady_timer step(co_await asio::this_coro::executor, 600ms);
          co_await step.async_wait(asio::use_awaitable);  // 3x the TTL
          co_return "done";
        };
        outcome = co_await async_while_held(redis, *token, work());
        co_await redis.async_process(token->release(), asio::use_awaitable);
        redis.close();
      },
      testing::rethrow_failure);
  io.run_for(20s);
  ASSERT_TRUE(outcome.has_value());
  ASSERT_TRUE(*outcome) << outcome->loss_cause().message();
  EXPECT_EQ(outcome->value(), "done");
}

TEST(LockAcl, AUserLimitedToThePrefixAndTheNeededCommandsCanUseLocks) {
  RedisServer server;
  // The minimal ACL documented in docs/locks.md.
  server.command({"ACL", "SETUSER", "locker", "on", ">pw", "resetkeys", "~leasehold:*",
                  "resetchannels", "-@all", "+set", "+get", "+del", "+pexpire", "+eval", "+evalsha",
                  "+ping", "+client|setname"});
  Client redis("unix://locker:pw@" + server.socket_path());
  const Lock<std::string> locks("acl", 30s);
  auto token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(token);
  EXPECT_TRUE(redis.process(token->extend()));
  EXPECT_TRUE(redis.process(token->release()));
  // Outside the prefix: refused, with a message naming the permission.
  const Lock<std::string> elsewhere("acl", 30s, "other");
  try {
    redis.process(elsewhere.try_lock("n"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::no_permission);
  }
}

TEST(LockAcl, AUserWithoutScriptRightsGetsAnErrorNamingThePermission) {
  RedisServer server;
  server.command({"ACL", "SETUSER", "noscripts", "on", ">pw", "resetkeys", "~leasehold:*",
                  "resetchannels", "-@all", "+set", "+get", "+del", "+pexpire", "+ping",
                  "+client|setname"});
  Client redis("unix://noscripts:pw@" + server.socket_path());
  const Lock<std::string> locks("acl", 30s);
  auto token = redis.process(locks.try_lock("n"));  // SET NX needs no script
  ASSERT_TRUE(token);
  for (bool extend : {true, false}) {
    try {
      if (extend)
        redis.process(token->extend());
      else
        redis.process(token->release());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::no_permission);
      // A script's first call on a connection is EVAL (later ones EVALSHA): the refusal names it.
      EXPECT_NE(std::string(e.what()).find("'eval"), std::string::npos) << e.what();
    }
  }
  // The lease is still there, still held, and runs out at its TTL: nothing is left without one.
  EXPECT_EQ(server.command({"GET", locks.key("n")}).str, token->value());
  EXPECT_GT(server.command({"PTTL", locks.key("n")}).integer, 0);
}

TEST(LockOutOfMemory, AcquireFailsClearlyAndLeavesNoKey) {
  RedisServer server(
      RedisServer::Options{{"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}});
  // Fill the server past its limit: a write that crosses it succeeds, the next is refused, so
  // smaller and smaller values until even a small one was refused.
  int fillers = 0;
  for (std::size_t size : {64 * 1024, 1024, 16}) {
    const std::string filler(size, 'x');
    while (fillers < 10000 &&
           !server.command({"SET", "filler:" + std::to_string(++fillers), filler}).is_error()) {
    }
  }
  Client redis(server.unix_url());
  const Lock<std::string> locks("oom", 30s);
  try {
    redis.process(locks.try_lock("n"));
    FAIL() << "an acquire succeeded on a full server";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("maxmemory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.command({"EXISTS", locks.key("n")}).integer, 0);
  // Freed memory: locks work again.
  server.command({"FLUSHALL"});
  auto token = redis.process(locks.try_lock("n"));
  ASSERT_TRUE(token);
  EXPECT_TRUE(redis.process(token->release()));
}

}  // namespace
}  // namespace leasehold
