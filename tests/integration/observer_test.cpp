// An Observer on a Client against a real redis-server: every event of a scripted run, with its
// values (an acquire found busy, one after waiting in turn, an extension, a loss by a key deleted
// behind the holder's back, a cron run and a skip, a reconnect), and the Prometheus text of the
// same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

// Every event as a line, for assertions and for the failure messages.
class RecordingObserver : public Observer {
 public:
  void on_acquire(const AcquireEvent& e) override {
    static constexpr const char* kOutcomes[] = {"acquired", "busy", "failed", "cancelled"};
    record("acquire " + std::string(e.key) + " " + kOutcomes[static_cast<int>(e.outcome)],
           e.waited);
  }
  void on_release(const ReleaseEvent& e) override {
    static constexpr const char* kOutcomes[] = {"released", "lost", "failed"};
    record("release " + std::string(e.key) + " " + kOutcomes[static_cast<int>(e.outcome)],
           e.held_for);
  }
  void on_extension(const ExtensionEvent& e) override {
    static constexpr const char* kOutcomes[] = {"extended", "refused", "failed"};
    record("extension " + std::string(e.key) + " " + kOutcomes[static_cast<int>(e.outcome)],
           e.time_left);
  }
  void on_loss(const LossEvent& e) override {
    static constexpr const char* kCauses[] = {"expired_or_taken_over", "unreachable", "closed",
                                              "hold_budget"};
    record("loss " + std::string(e.key) + " " + kCauses[static_cast<int>(e.cause)], {});
  }
  void on_cron_tick(const CronTickEvent& e) override {
    static constexpr const char* kOutcomes[] = {"ran", "skipped", "failed"};
    record("cron " + std::string(e.job) + " " + kOutcomes[static_cast<int>(e.outcome)], e.duration);
  }
  void on_wait(const WaitEvent& e) override {
    record("wait " + std::string(e.key) + " " + std::to_string(e.position), {});
  }
  void on_reconnect(const ReconnectEvent& e) override {
    record("reconnect " + std::string(e.server), {});
  }

  // The duration of the first event that is `line`, once there is one.
  std::optional<Clock::duration> find(const std::string& line) const {
    std::lock_guard lock(mutex_);
    for (const auto& [seen, duration] : events_)
      if (seen == line)
        return duration;
    return std::nullopt;
  }
  bool saw(const std::string& line) const { return find(line).has_value(); }
  std::size_t count(const std::string& line) const {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count_if(events_.begin(), events_.end(),
                                                  [&](const auto& e) { return e.first == line; }));
  }
  std::string all() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& event : events_)
      out += event.first + "\n";
    return out;
  }

 private:
  void record(std::string line, Clock::duration duration) {
    std::lock_guard lock(mutex_);
    events_.emplace_back(std::move(line), duration);
  }

  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, Clock::duration>> events_;
};

class ObserverTest : public testing::SharedServerTest {
 protected:
  ClientOptions observed_options() {
    ClientOptions options;
    options.observer = observer_;
    options.client_name = client_name_;
    return options;
  }

  std::shared_ptr<RecordingObserver> observer_ = std::make_shared<RecordingObserver>();
  std::string name_ = "obs" + std::to_string(unique_number());
  std::string client_name_ = "observed-" + name_;
  Client redis_{server_->unix_url(), observed_options()};
  Locker locker_{redis_};
};

TEST_F(ObserverTest, SeesABusyAcquireAWaitAnExtensionAndARelease) {
  const std::string key = locker_.key(name_);
  Client other_client(server_->unix_url());
  Locker other(other_client);
  Mutex held(other, name_);
  held.lock();

  EXPECT_THROW(locker_.with_lock(name_, [] {}, {.ttl = 1s, .retry_attempts = 0}), AcquireError);
  EXPECT_TRUE(observer_->saw("acquire " + key + " busy")) << observer_->all();

  auto waiting = std::async(std::launch::async, [&] {
    locker_.with_lock(
        name_,
        [&] {
          // Runs until its keep-alive has extended the 600 ms lease once (a third in).
          EXPECT_TRUE(eventually([&] { return observer_->saw("extension " + key + " extended"); },
                                 5s, 10ms))
              << observer_->all();
        },
        {.ttl = 600ms, .retry_attempts = WithLockOptions::forever});
  });
  ASSERT_TRUE(eventually([&] { return observer_->saw("wait " + key + " 1"); }, 5s, 5ms))
      << "refused while held, at the head of the queue\n"
      << observer_->all();
  held.unlock();
  waiting.get();

  const auto acquired = observer_->find("acquire " + key + " acquired");
  ASSERT_TRUE(acquired) << observer_->all();
  EXPECT_GT(*acquired, 0ms) << "it waited for the holder";
  const auto extended_with = observer_->find("extension " + key + " extended");
  ASSERT_TRUE(extended_with);
  EXPECT_GT(*extended_with, 0ms);
  EXPECT_LE(*extended_with, 600ms) << "the time the lease had left, by this process's clock";
  const auto held_for = observer_->find("release " + key + " released");
  ASSERT_TRUE(held_for) << observer_->all();
  EXPECT_GE(*held_for, 150ms) << "held until after its first extension";
  EXPECT_FALSE(observer_->saw("loss " + key + " expired_or_taken_over"));
}

TEST_F(ObserverTest, SeesALossWithItsCauseAndTheLostRelease) {
  const std::string key = locker_.key(name_);
  EXPECT_THROW(
      locker_.with_lock(name_,
                        [&](std::stop_token stop) {
                          server_->command({"DEL", key});  // behind the holder's back
                          EXPECT_TRUE(eventually([&] { return stop.stop_requested(); }, 5s, 5ms));
                        },
                        {.ttl = 600ms, .retry_attempts = 0}),
      LockLostError);
  EXPECT_TRUE(observer_->saw("acquire " + key + " acquired")) << observer_->all();
  EXPECT_TRUE(observer_->saw("extension " + key + " refused")) << observer_->all();
  EXPECT_TRUE(observer_->saw("loss " + key + " expired_or_taken_over")) << observer_->all();
  EXPECT_TRUE(observer_->saw("release " + key + " lost")) << observer_->all();
  EXPECT_FALSE(observer_->saw("release " + key + " released")) << observer_->all();
}

TEST_F(ObserverTest, SeesTheQueriesACallerRunsItselfWhoeverRunsThem) {
  const Lock<std::string> lock("obs", 2s);
  const std::string key = lock.key(name_);
  Client other(server_->unix_url());

  std::optional<LockToken<Lock<std::string>>> token = redis_.process(lock.try_lock(name_));
  ASSERT_TRUE(token);
  EXPECT_TRUE(observer_->saw("acquire " + key + " acquired")) << observer_->all();
  EXPECT_FALSE(redis_.process(lock.try_lock(name_))) << "held by this process's first try";
  EXPECT_TRUE(observer_->saw("acquire " + key + " busy")) << observer_->all();
  EXPECT_FALSE(other.process(lock.try_lock(name_)));
  EXPECT_EQ(observer_->count("acquire " + key + " busy"), 1u)
      << "a client without the observer tells it nothing\n"
      << observer_->all();

  EXPECT_TRUE(redis_.process(token->extend()));
  const auto time_left = observer_->find("extension " + key + " extended");
  ASSERT_TRUE(time_left) << observer_->all();
  EXPECT_GT(*time_left, 1s) << "a 2 s lease, extended at once";
  EXPECT_LE(*time_left, 2s);

  EXPECT_TRUE(redis_.process(token->release()));
  const auto held_for = observer_->find("release " + key + " released");
  ASSERT_TRUE(held_for) << observer_->all();
  EXPECT_GT(*held_for, 0ms);
  EXPECT_LT(*held_for, 2s);
  EXPECT_FALSE(redis_.process(token->release())) << "released already";
  EXPECT_TRUE(observer_->saw("release " + key + " lost")) << observer_->all();
  EXPECT_FALSE(redis_.process(token->extend()));
  EXPECT_TRUE(observer_->saw("extension " + key + " refused")) << observer_->all();
}

TEST_F(ObserverTest, SeesEveryKindsTriesInABatchAndAFailedOneAsFailed) {
  const RwLock<std::string> rw("obsrw", 2s);
  const Semaphore<std::string> permits("obssem", 1, 2s);
  std::vector<TryRead<RwLock<std::string>>> reads{rw.try_read(name_), rw.try_read(name_)};
  for (const auto& read : redis_.process(std::span<const TryRead<RwLock<std::string>>>(reads)))
    EXPECT_TRUE(read.has_value() && read->has_value());
  EXPECT_EQ(observer_->count("acquire " + rw.writer_key(name_) + " acquired"), 2u)
      << "one event per query of the batch\n"
      << observer_->all();
  EXPECT_FALSE(redis_.process(rw.try_write(name_))) << "readers hold it";
  EXPECT_TRUE(observer_->saw("acquire " + rw.writer_key(name_) + " busy")) << observer_->all();

  ASSERT_TRUE(redis_.process(permits.try_acquire(name_)));
  EXPECT_TRUE(observer_->saw("acquire " + permits.holders_key(name_) + " acquired"))
      << observer_->all();

  const Lock<std::string> lock("obs", 2s);
  server_->command({"HSET", lock.key(name_), "field", "value"});  // a key of another type
  EXPECT_THROW(redis_.process(lock.try_lock(name_)), Error);
  EXPECT_TRUE(observer_->saw("acquire " + lock.key(name_) + " failed")) << observer_->all();
}

TEST_F(ObserverTest, SeesACronRunAndASkipAndTheirDurations) {
  const cron::Job first = cron::once_per_interval(redis_, name_, 10s, [] {
    std::this_thread::sleep_for(20ms);  // the run's work, whose duration is told
  });
  const cron::Job second = cron::once_per_interval(
      redis_, name_, 10s, [] { ADD_FAILURE() << "another replica holds this interval"; });
  cron::Tick tick;
  tick.run = 1;
  EXPECT_FALSE(first(tick));
  EXPECT_FALSE(second(tick));
  const auto ran = observer_->find("cron " + name_ + " ran");
  ASSERT_TRUE(ran) << observer_->all();
  EXPECT_GE(*ran, 20ms);
  EXPECT_TRUE(observer_->saw("cron " + name_ + " skipped")) << observer_->all();
}

TEST_F(ObserverTest, SeesAReconnectAfterItsConnectionIsKilled) {
  redis_.process(Command{"PING"});
  const std::string clients = server_->command({"CLIENT", "LIST"}).str;
  const std::size_t at = clients.find("name=" + client_name_ + " ");
  ASSERT_NE(at, std::string::npos) << clients;
  const std::size_t line =
      clients.rfind('\n', at) == std::string::npos ? 0 : clients.rfind('\n', at) + 1;
  const std::string id = clients.substr(line + 3, clients.find(' ', line) - line - 3);  // "id=N"
  server_->command({"CLIENT", "KILL", "ID", id});
  EXPECT_TRUE(
      eventually([&] { return observer_->all().find("reconnect ") != std::string::npos; }, 5s, 5ms))
      << observer_->all();
  EXPECT_EQ(redis_.process(Command{"PING"}).str, "PONG") << "connected again";
}

TEST_F(ObserverTest, MetricsCountTheSameRunInPrometheusText) {
  auto metrics = std::make_shared<Metrics>();
  ClientOptions options;
  options.observer = metrics;
  Client redis(server_->unix_url(), options);
  Locker locker(redis);
  locker.with_lock(name_, [] {}, {.ttl = 1s, .retry_attempts = 0});
  Client other_client(server_->unix_url());
  Locker other(other_client);
  Mutex held(other, name_);
  held.lock();
  EXPECT_THROW(locker.with_lock(name_, [] {}, {.ttl = 1s, .retry_attempts = 0}), AcquireError);
  const std::string text = metrics->prometheus_text();
  EXPECT_NE(text.find("leasehold_acquires_total{outcome=\"acquired\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("leasehold_acquires_total{outcome=\"busy\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("leasehold_releases_total{outcome=\"released\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("leasehold_held_seconds_count 1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace leasehold
