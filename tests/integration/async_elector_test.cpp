// async_run_elector against a real redis-server, on an io_context of the test's: two async
// electors take turns with increasing terms; a leader forced out has its work cancelled and
// stands again; a stopped campaign leaves no place; cancelling the awaitable while it leads
// cancels the work and resigns; work that throws is resigned for and its exception leaves.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <stop_token>
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
using Work = asio::awaitable<void>;

// Waits on a timer of the coroutine's executor for `duration` (cancellable).
Work pause(Clock::duration duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

class AsyncElectorTest : public testing::SharedServerTest {
 protected:
  // Runs `elector` on the test's io_context (its own thread) and returns how it ended.
  std::exception_ptr run(Work elector, asio::cancellation_slot slot = {}) {
    std::exception_ptr ended;
    bool done = false;
    asio::co_spawn(io_, std::move(elector),
                   asio::bind_cancellation_slot(slot, [&](std::exception_ptr error) {
                     ended = error;
                     done = true;
                   }));
    io_.run();
    EXPECT_TRUE(done);
    return ended;
  }

  bool nobody_waits() const {
    return server_->command({"ZCARD", detail::queue_key(elections_.key(name_))}).integer == 0;
  }
  bool nobody_leads() { return !redis_.process(elections_.leader(name_)); }

  asio::io_context io_;
  std::string name_ = "ae" + std::to_string(unique_number());
  Election<std::string> elections_{"scheduler", 2s};
  Client redis_{server_->unix_url()};
};

TEST_F(AsyncElectorTest, TwoElectorsTakeTurnsWithIncreasingTerms) {
  Client other(server_->unix_url());
  std::vector<std::pair<int, std::uint64_t>> terms;  // on the io_context's one thread
  std::stop_source stop;
  int leading = 0;
  auto elector = [&](Client& client, int e) {
    return async_run_elector(
        client, elections_, name_,
        [&, e](const Term<std::string>& term, std::stop_token) -> Work {
          EXPECT_EQ(++leading, 1) << "one leader at a time";
          terms.emplace_back(e, term.number);
          co_await pause(50ms);
          --leading;
          if (terms.size() == 6)
            stop.request_stop();
        },
        {}, stop.get_token());
  };
  int ended = 0;
  for (auto [client, e] : {std::pair{&redis_, 0}, std::pair{&other, 1}})
    asio::co_spawn(io_, elector(*client, e), [&](std::exception_ptr error) {
      EXPECT_FALSE(error);
      ++ended;
    });
  io_.run();
  EXPECT_EQ(ended, 2);
  ASSERT_GE(terms.size(), 6u);
  for (std::size_t i = 1; i < terms.size(); ++i)
    EXPECT_GT(terms[i].second, terms[i - 1].second);
  bool both = false;
  for (const auto& [e, term] : terms)
    both = both || e != terms.front().first;
  EXPECT_TRUE(both) << "the other elector leads after a resign";
  EXPECT_TRUE(nobody_leads());
  EXPECT_TRUE(nobody_waits());
}

TEST_F(AsyncElectorTest, ALeaderForcedOutHasItsWorkCancelledAndStandsAgain) {
  std::stop_source stop;
  std::vector<std::uint64_t> terms;
  std::vector<Deposed> deposed;
  bool cancelled = false;
  ElectorOptions options;
  options.deposed = [&](const Deposed& d) { deposed.push_back(d); };
  std::thread operator_([&] {
    ASSERT_TRUE(eventually([&] { return !nobody_leads(); }));
    EXPECT_EQ(redis_.process(elections_.force_release(name_)), 1);
  });
  const std::exception_ptr ended = run(async_run_elector(
      redis_, elections_, name_,
      [&](const Term<std::string>& term, std::stop_token work_stop) -> Work {
        terms.push_back(term.number);
        if (terms.size() == 2) {
          stop.request_stop();
          co_return;
        }
        try {
          co_await pause(10s);
        } catch (const std::system_error& e) {
          cancelled = e.code() == asio::error::operation_aborted;
          EXPECT_TRUE(work_stop.stop_requested());
          throw;
        }
      },
      options, stop.get_token()));
  operator_.join();
  EXPECT_FALSE(ended);
  EXPECT_TRUE(cancelled) << "the work is cancelled when the lease is lost";
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_GT(terms[1], terms[0]);
  ASSERT_EQ(deposed.size(), 2u);
  EXPECT_EQ(deposed[0].how, TermEnd::lost);
  EXPECT_EQ(deposed[1].how, TermEnd::stopped);
  EXPECT_TRUE(nobody_leads());
}

TEST_F(AsyncElectorTest, AStoppedCampaignLeavesNoPlaceBehind) {
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  std::stop_source stop;
  std::thread stopper([&] {
    ASSERT_TRUE(eventually([&] { return !nobody_waits(); }));
    stop.request_stop();
  });
  bool led = false;
  const std::exception_ptr ended = run(async_run_elector(
      redis_, elections_, name_,
      [&](const Term<std::string>&, std::stop_token) -> Work {
        led = true;
        co_return;
      },
      {}, stop.get_token()));
  stopper.join();
  EXPECT_FALSE(ended);
  EXPECT_FALSE(led);
  EXPECT_TRUE(nobody_waits());
  EXPECT_TRUE(redis_.process(elections_.resign(*leader)));
}

TEST_F(AsyncElectorTest, CancellingItWhileItCampaignsLeavesNoPlaceBehind) {
  auto leader = wait_for(redis_, elections_.campaign(name_), 5s);
  ASSERT_TRUE(leader);
  asio::cancellation_signal cancel;
  std::thread canceller([&] {
    ASSERT_TRUE(eventually([&] { return !nobody_waits(); }));
    asio::post(io_, [&] { cancel.emit(asio::cancellation_type::terminal); });
  });
  bool led = false;
  const std::exception_ptr ended =
      run(async_run_elector(redis_, elections_, name_,
                            [&](const Term<std::string>&, std::stop_token) -> Work {
                              led = true;
                              co_return;
                            }),
          cancel.slot());
  canceller.join();
  ASSERT_TRUE(ended);
  EXPECT_THROW(std::rethrow_exception(ended), std::system_error);
  EXPECT_FALSE(led);
  EXPECT_TRUE(nobody_waits());
  EXPECT_TRUE(redis_.process(elections_.resign(*leader)));
}

TEST_F(AsyncElectorTest, CancellingItWhileLeadingCancelsTheWorkAndResigns) {
  asio::cancellation_signal cancel;
  bool work_cancelled = false;
  const std::exception_ptr ended = run(
      async_run_elector(redis_, elections_, name_,
                        [&](const Term<std::string>&, std::stop_token) -> Work {
                          // The cancel is emitted on the io_context's thread, as the work runs.
                          asio::post(io_, [&] { cancel.emit(asio::cancellation_type::terminal); });
                          try {
                            co_await pause(10s);
                          } catch (const std::system_error&) {
                            work_cancelled = true;
                            throw;
                          }
                        }),
      cancel.slot());
  ASSERT_TRUE(ended);
  try {
    std::rethrow_exception(ended);
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted);
  }
  EXPECT_TRUE(work_cancelled);
  EXPECT_TRUE(nobody_leads()) << "resigned, not left to run out";
}

TEST_F(AsyncElectorTest, WorkThatThrowsIsResignedForAndItsExceptionLeaves) {
  const std::exception_ptr ended = run(async_run_elector(
      redis_, elections_, name_, [&](const Term<std::string>&, std::stop_token) -> Work {
        co_await pause(1ms);
        throw std::runtime_error("scheduler failed");
      }));
  ASSERT_TRUE(ended);
  EXPECT_THROW(std::rethrow_exception(ended), std::runtime_error);
  EXPECT_TRUE(nobody_leads());
}

}  // namespace
}  // namespace leasehold
