// The connection's pipeline, driven by hand: calls, bytes taken by the socket, replies and times
// go in; what to write, which call completes how, and when to be woken come out. No server, no
// socket, no threads.
#include "pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport.hpp"

namespace leasehold::detail {
namespace {

using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kTimeout = 100ms;

// What the pipeline's completions hand to Operation::complete: nothing of it is used here.
class NoTransport final : public Transport {
 public:
  void submit(std::unique_ptr<Operation>) override { ADD_FAILURE() << "nothing sends here"; }
  void when_connected(UniqueFunction<void(std::error_code, std::string)>) override {}
  void close() override {}
  void cancel(std::uint64_t, asio::cancellation_type) override {}
  Notifications& notifications() override { std::abort(); }
  Clock::time_point now() const noexcept override { return Clock::now(); }
  const RedisUrl& url() const noexcept override { return url_; }
  const ClientOptions& options() const noexcept override { return options_; }
  const ConnectionStrand& strand() const noexcept override { return strand_; }

 private:
  asio::io_context io_;
  ConnectionStrand strand_{io_.get_executor()};
  RedisUrl url_;
  ClientOptions options_;
};

struct Completion {
  std::string name;
  std::error_code error;
  std::string detail;
  std::vector<std::optional<Reply>> replies;
};

// A call of named requests that records its replies and how it ended into `log`.
class RecordedCall final : public Operation {
 public:
  RecordedCall(std::string name, std::vector<Request> requests, std::vector<Completion>& log)
      : name_(std::move(name)), requests_(std::move(requests)), log_(log) {
    replies_.resize(requests_.size());
    set_requests(requests_);
  }
  void on_reply(std::size_t index, Reply&& reply) override { replies_[index] = std::move(reply); }
  void complete(Transport&, std::error_code error, std::string detail) override {
    log_.push_back({name_, error, std::move(detail), replies_});
  }

 private:
  std::string name_;
  std::vector<Request> requests_;
  std::vector<std::optional<Reply>> replies_;
  std::vector<Completion>& log_;
};

const Script kScript("return 1");

Request echo(const std::string& what) {
  return Request::command({"ECHO", what});
}
Request script_call(const std::string& key) {
  const std::string_view keys[] = {key};
  return Request::script(kScript, keys, {});
}
std::string bytes_of(const Request& request) {
  return std::string(request.bytes());
}

class PipelineTest : public ::testing::Test, protected PipelineSink {
 protected:
  void complete(Operation& operation, std::error_code error, std::string detail) override {
    operation.complete(transport_, error, std::move(detail));
    if (on_complete)
      on_complete();
  }

  // Queues a call made at `t0 + made_at` (its deadline kTimeout after that).
  void push(const std::string& name, std::vector<Request> requests,
            std::chrono::milliseconds made_at = 0ms, std::uint64_t id = 0) {
    auto call = std::make_unique<RecordedCall>(name, std::move(requests), log);
    call->id = id;
    call->sent = t0 + made_at;
    call->deadline = call->sent + kTimeout;
    pipeline.push(std::move(call));
  }
  void push(const std::string& name, Request request, std::chrono::milliseconds made_at = 0ms,
            std::uint64_t id = 0) {
    std::vector<Request> requests;
    requests.push_back(std::move(request));
    push(name, std::move(requests), made_at, id);
  }
  // Writes everything write() hands out, as a socket that takes it all.
  std::string write_all() {
    const std::string bytes(pipeline.write());
    pipeline.written(bytes.size());
    return bytes;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Completion& completion : log)
      out.push_back(completion.name);
    return out;
  }

  NoTransport transport_;
  const Clock::time_point t0 = Clock::now();
  Pipeline pipeline{*this, "127.0.0.1:1", kTimeout};
  std::vector<Completion> log;
  std::function<void()> on_complete;
};

TEST_F(PipelineTest, NothingIsWrittenBeforeTheConnectionIsSetUp) {
  push("a", echo("a"));
  EXPECT_TRUE(pipeline.write().empty());
  EXPECT_FALSE(pipeline.idle());
  pipeline.on_connected(t0);
  EXPECT_EQ(write_all(), bytes_of(echo("a")));
}

TEST_F(PipelineTest, QueuedCallsGoOutInOneWriteAndRepliesAreMatchedInOrder) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  std::vector<Request> two;
  two.push_back(echo("b1"));
  two.push_back(echo("b2"));
  push("b", std::move(two));
  push("c", echo("c"));
  EXPECT_EQ(write_all(), bytes_of(echo("a")) + bytes_of(echo("b1")) + bytes_of(echo("b2")) +
                             bytes_of(echo("c")));
  EXPECT_TRUE(pipeline.write().empty()) << "nothing waits";

  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("ra")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("rb1")));
  EXPECT_EQ(names(), (std::vector<std::string>{"a"})) << "b completes with its last reply";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("rb2")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("rc")));
  ASSERT_EQ(names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(log[1].error);
  EXPECT_EQ(log[1].replies[0], Reply::make_string("rb1"));
  EXPECT_EQ(log[1].replies[1], Reply::make_string("rb2"));
  EXPECT_TRUE(pipeline.idle());
}

TEST_F(PipelineTest, AReplyNobodyAskedForIsRefused) {
  pipeline.on_connected(t0);
  EXPECT_FALSE(pipeline.on_reply(Reply::make_status("OK")));
  push("a", echo("a"));
  write_all();
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("a")));
  EXPECT_FALSE(pipeline.on_reply(Reply::make_string("a")));
}

TEST_F(PipelineTest, WhatTheSocketDidNotTakeIsSentBeforeAnythingElse) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  push("b", echo("b"));
  const std::string all = bytes_of(echo("a")) + bytes_of(echo("b"));
  EXPECT_EQ(pipeline.write(), all);
  pipeline.written(5);
  EXPECT_EQ(pipeline.unsent(), all.substr(5));
  push("c", echo("c"));
  EXPECT_TRUE(pipeline.write().empty()) << "the rest of the last write goes first";
  pipeline.sent_unsent();
  EXPECT_EQ(write_all(), bytes_of(echo("c")));
}

TEST_F(PipelineTest, ASingleRequestPartlyWrittenKeepsItsRest) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  const std::string bytes = bytes_of(echo("a"));
  EXPECT_EQ(pipeline.write(), bytes);
  pipeline.written(3);
  EXPECT_EQ(pipeline.unsent(), bytes.substr(3));
  EXPECT_FALSE(pipeline.idle());
  pipeline.sent_unsent();
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("a")));
  EXPECT_TRUE(pipeline.idle());
}

TEST_F(PipelineTest, ACallMadeByACompletionWaitsForTheNextWrite) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  write_all();
  on_complete = [&] {
    on_complete = nullptr;
    push("b", echo("b"));
  };
  pipeline.on_reply(Reply::make_string("a"));
  EXPECT_EQ(write_all(), bytes_of(echo("b")));
}

TEST_F(PipelineTest, ScriptCallsAnsweredNoScriptGoOutAgainAsEvalInTheirOrder) {
  pipeline.on_connected(t0);
  push("a", script_call("a"));
  push("b", script_call("b"));
  push("c", echo("c"));
  write_all();
  EXPECT_TRUE(pipeline.on_reply(Reply::make_error("NOSCRIPT No matching script.")));
  push("d", echo("d"));
  EXPECT_TRUE(pipeline.write().empty())
      << "b, still in flight, may come back NOSCRIPT and must go out before d";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_error("NOSCRIPT No matching script.")));
  EXPECT_TRUE(pipeline.write().empty()) << "c is still in flight";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("c")));
  EXPECT_EQ(names(), (std::vector<std::string>{"c"}));
  EXPECT_EQ(write_all(), bytes_of(script_call("a").eval_fallback()) +
                             bytes_of(script_call("b").eval_fallback()) + bytes_of(echo("d")));
  pipeline.on_reply(Reply::make_integer(1));
  pipeline.on_reply(Reply::make_integer(2));
  pipeline.on_reply(Reply::make_string("d"));
  ASSERT_EQ(names(), (std::vector<std::string>{"c", "a", "b", "d"}));
  EXPECT_EQ(log[1].replies[0], Reply::make_integer(1));
  EXPECT_FALSE(log[1].error);
}

// The scripts were flushed: a's script is missing, but b's, to the same key, was loaded again
// meanwhile (by another client) and b ran. Sent again, a would run after b, which its caller made
// later: it fails instead. c, to another key, goes out again as usual.
TEST_F(PipelineTest, ANoScriptCallOvertakenByALaterCallToItsKeyFailsInsteadOfRunningAfterIt) {
  pipeline.on_connected(t0);
  push("a", script_call("lease"));
  push("c", script_call("other"));
  push("b", script_call("lease"));
  write_all();
  EXPECT_TRUE(pipeline.on_reply(Reply::make_error("NOSCRIPT No matching script.")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_error("NOSCRIPT No matching script.")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_integer(1)));
  ASSERT_EQ(names(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(log[1].error, errc::no_script);
  EXPECT_NE(log[1].detail.find("ran first"), std::string::npos) << log[1].detail;
  EXPECT_EQ(write_all(), bytes_of(script_call("other").eval_fallback())) << "c goes out again";
  pipeline.on_reply(Reply::make_integer(2));
  EXPECT_EQ(names(), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_FALSE(log[2].error);
}

TEST_F(PipelineTest, ACommandAnsweredNoScriptIsNotSentAgain) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  write_all();
  pipeline.on_reply(Reply::make_error("NOSCRIPT not a script call"));
  ASSERT_EQ(names(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(log[0].replies[0], Reply::make_error("NOSCRIPT not a script call"));
  EXPECT_TRUE(pipeline.write().empty());
}

TEST_F(PipelineTest, ACallInFlightPastItsDeadlineTimesOutAndItsLateReplyIsDropped) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  push("b", echo("b"), 50ms);
  write_all();
  EXPECT_EQ(pipeline.wake_at(), t0 + kTimeout);
  pipeline.on_time(t0 + kTimeout - 1ms);
  EXPECT_TRUE(log.empty());
  pipeline.on_time(t0 + kTimeout);
  ASSERT_EQ(names(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(log[0].error, make_error_code(errc::command_timeout));
  EXPECT_NE(log[0].detail.find("was sent and may or may not have run"), std::string::npos)
      << log[0].detail;
  EXPECT_EQ(pipeline.wake_at(), t0 + 50ms + kTimeout) << "b is due next";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("late a")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("b")));
  ASSERT_EQ(names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(log[1].error);
  EXPECT_EQ(log[1].replies[0], Reply::make_string("b")) << "a's late reply went to a";
}

TEST_F(PipelineTest, AWaitingCallPastItsDeadlineSaysItWasNotSent) {
  push("a", echo("a"));
  pipeline.on_time(t0 + kTimeout);
  ASSERT_EQ(names(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(log[0].error, make_error_code(errc::command_timeout));
  EXPECT_NE(log[0].detail.find("no connection to Redis at 127.0.0.1:1"), std::string::npos)
      << log[0].detail;
  EXPECT_EQ(pipeline.wake_at(), Clock::time_point::max());
  EXPECT_TRUE(pipeline.idle());
}

TEST_F(PipelineTest, AServerSilentForTwiceTheTimeoutAfterATimeoutIsToBeReplaced) {
  pipeline.on_connected(t0);
  push("a", echo("a"), 1ms);
  write_all();
  EXPECT_FALSE(pipeline.on_time(t0 + 1ms + kTimeout)) << "a times out: the silence starts";
  EXPECT_EQ(pipeline.wake_at(), t0 + 1ms + 2 * kTimeout);
  EXPECT_FALSE(pipeline.on_time(t0 + 2 * kTimeout));
  const std::optional<Failure> silence = pipeline.on_time(t0 + 1ms + 2 * kTimeout);
  ASSERT_TRUE(silence);
  EXPECT_EQ(silence->error, make_error_code(errc::connection_lost));
  EXPECT_NE(silence->detail.find("sent nothing for 200 ms"), std::string::npos) << silence->detail;
}

TEST_F(PipelineTest, AServerThatAnswersLateIsNotSilent) {
  pipeline.on_connected(t0);
  push("a", echo("a"), 1ms);
  write_all();
  pipeline.on_time(t0 + 1ms + kTimeout);
  pipeline.on_read(t0 + 150ms);
  pipeline.on_reply(Reply::make_string("late a"));
  EXPECT_FALSE(pipeline.on_time(t0 + 1ms + 2 * kTimeout));
  EXPECT_EQ(pipeline.wake_at(), Clock::time_point::max());
}

TEST_F(PipelineTest, ALostConnectionSendsRetrySafeCallsAgainAndFailsTheOthers) {
  pipeline.on_connected(t0);
  push("expired", echo("x"));
  push("safe1", Request::command({"GET", "k"}).retry_safe(), 10ms);
  push("unsafe", Request::command({"INCR", "k"}), 10ms);
  push("safe2", Request::command({"GET", "j"}).retry_safe(), 10ms);
  write_all();
  pipeline.on_time(t0 + kTimeout);  // "expired" times out in flight
  push("queued", echo("q"), 20ms);
  const Failure lost{make_error_code(errc::connection_lost), "gone"};
  pipeline.on_lost(lost);
  ASSERT_EQ(names(), (std::vector<std::string>{"expired", "unsafe"}));
  EXPECT_EQ(log[1].error, make_error_code(errc::connection_lost));
  EXPECT_EQ(log[1].detail, "gone");
  EXPECT_TRUE(pipeline.write().empty()) << "not connected";
  pipeline.on_connected(t0 + 30ms);
  EXPECT_EQ(write_all(), bytes_of(Request::command({"GET", "k"})) +
                             bytes_of(Request::command({"GET", "j"})) + bytes_of(echo("q")));
}

// A WAIT counts the replicas of the writes sent before it on its connection: on another (a new
// master's, after a failover) it would vouch for writes that server never had.
TEST_F(PipelineTest, ACallBoundToItsConnectionFailsWithItSentOrNot) {
  const auto push_bound = [&](const std::string& name, std::chrono::milliseconds made_at) {
    auto call = std::make_unique<RecordedCall>(
        name, std::vector<Request>{Request::command({"WAIT", "1", "100"})}, log);
    call->bound_to_connection = true;
    call->sent = t0 + made_at;
    call->deadline = call->sent + kTimeout;
    pipeline.push(std::move(call));
  };
  pipeline.on_connected(t0);
  push_bound("sent", 0ms);
  write_all();
  push_bound("queued", 10ms);
  push("other", Request::command({"GET", "k"}).retry_safe(), 10ms);
  pipeline.on_lost({make_error_code(errc::connection_lost), "gone"});
  ASSERT_EQ(names(), (std::vector<std::string>{"sent", "queued"}));
  EXPECT_EQ(log[1].error, make_error_code(errc::connection_lost));
  pipeline.on_connected(t0 + 30ms);
  EXPECT_EQ(write_all(), bytes_of(Request::command({"GET", "k"}))) << "the other call goes out";

  push_bound("retired", 40ms);
  pipeline.retire(route_again_error(), "left");
  const auto retired =
      std::find_if(log.begin(), log.end(), [](const Completion& c) { return c.name == "retired"; });
  ASSERT_NE(retired, log.end());
  EXPECT_EQ(retired->error, make_error_code(errc::connection_lost)) << "not routed again";
}

// A bound call that takes later ones in while it waits to be written, as a WAIT does.
class JoinableCall final : public Operation {
 public:
  JoinableCall(std::string name, std::vector<Completion>& log)
      : names_{std::move(name)}, log_(log) {
    set_requests({&request_, 1});
    bound_to_connection = true;
  }
  bool absorb(Operation& later) override {
    auto* call = dynamic_cast<JoinableCall*>(&later);
    if (call == nullptr)
      return false;
    names_.insert(names_.end(), call->names_.begin(), call->names_.end());
    call->names_.clear();
    return true;
  }
  void on_reply(std::size_t, Reply&&) override {}
  void complete(Transport&, std::error_code error, std::string detail) override {
    for (const std::string& name : names_)
      log_.push_back({name, error, detail, {}});
  }

 private:
  Request request_ = Request::command({"WAIT", "1", "100"});
  std::vector<std::string> names_;
  std::vector<Completion>& log_;
};

TEST_F(PipelineTest, ABoundCallJoinsALikeOneWaitingToBeWritten) {
  const auto push_joinable = [&](const std::string& name) {
    auto call = std::make_unique<JoinableCall>(name, log);
    call->sent = t0;
    call->deadline = t0 + kTimeout;
    pipeline.push(std::move(call));
  };
  pipeline.on_connected(t0);
  push_joinable("a");
  push("between", echo("x"));
  push_joinable("b");
  const std::string wait = bytes_of(Request::command({"WAIT", "1", "100"}));
  EXPECT_EQ(write_all(), wait + bytes_of(echo("x"))) << "b joined a: one WAIT";
  push_joinable("c");
  EXPECT_EQ(write_all(), wait) << "a was written: c goes on its own";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_integer(1)));
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(PipelineTest, FailingEverythingCompletesEachCallOnce) {
  pipeline.on_connected(t0);
  push("a", echo("a"));
  write_all();
  pipeline.on_time(t0 + kTimeout);  // a times out in flight
  push("b", echo("b"), 10ms);
  write_all();
  push("c", echo("c"), 10ms);
  pipeline.fail_all({make_error_code(errc::closed), "closed"});
  ASSERT_EQ(names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(log[1].error, make_error_code(errc::closed));
  EXPECT_EQ(log[2].error, make_error_code(errc::closed));
  EXPECT_TRUE(pipeline.idle());
}

TEST_F(PipelineTest, ARetiredNodeHandsBackWhatMayBeRoutedAgain) {
  pipeline.on_connected(t0);
  push("safe", Request::command({"GET", "k"}).retry_safe());
  push("unsafe", Request::command({"INCR", "k"}));
  write_all();
  push("queued", echo("q"));
  const std::error_code again = route_again_error();
  pipeline.retire(again, "left");
  ASSERT_EQ(names(), (std::vector<std::string>{"safe", "unsafe", "queued"}));
  EXPECT_EQ(log[0].error, again);
  EXPECT_EQ(log[1].error, make_error_code(errc::connection_lost));
  EXPECT_EQ(log[1].detail, "left");
  EXPECT_EQ(log[2].error, again);
}

using Scope = Pipeline::CancelScope;

TEST_F(PipelineTest, AWaitingCallCancelledLeavesTheQueueAndIsNeverSent) {
  pipeline.on_connected(t0);
  push("sent", echo("s"), 0ms, 1);
  write_all();
  push("a", echo("a"), 0ms, 2);
  push("b", echo("b"), 0ms, 3);
  EXPECT_TRUE(pipeline.cancel(2, Scope::unsent));
  ASSERT_EQ(names(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(log[0].error, std::error_code(asio::error::operation_aborted));
  EXPECT_NE(log[0].detail.find("before it was sent"), std::string::npos) << log[0].detail;
  EXPECT_FALSE(pipeline.cancel(2, Scope::even_if_sent)) << "cancelled once only";
  EXPECT_FALSE(pipeline.cancel(99, Scope::even_if_sent)) << "no such call";
  EXPECT_FALSE(pipeline.cancel(1, Scope::unsent)) << "in flight: it may have run";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("s")));
  EXPECT_EQ(write_all(), bytes_of(echo("b"))) << "a never goes out";
}

TEST_F(PipelineTest, ACallCancelledInFlightEndsAtOnceAndItsReplyIsDropped) {
  pipeline.on_connected(t0);
  push("a", echo("a"), 0ms, 1);
  std::vector<Request> two;
  two.push_back(echo("b1"));
  two.push_back(echo("b2"));
  push("b", std::move(two), 0ms, 2);
  push("c", echo("c"), 0ms, 3);
  write_all();
  EXPECT_TRUE(pipeline.cancel(2, Scope::even_if_sent));  // in the middle of in_flight_
  ASSERT_EQ(names(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(log[0].error, std::error_code(asio::error::operation_aborted));
  EXPECT_NE(log[0].detail.find("after it was sent to Redis at 127.0.0.1:1"), std::string::npos)
      << log[0].detail;
  EXPECT_FALSE(pipeline.cancel(2, Scope::even_if_sent)) << "cancelled once only";
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("a")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("b1")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("b2")));
  EXPECT_TRUE(pipeline.on_reply(Reply::make_string("c")));
  ASSERT_EQ(names(), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(log[1].replies[0], Reply::make_string("a"));
  EXPECT_EQ(log[2].replies[0], Reply::make_string("c")) << "b's replies went to b, dropped";
  EXPECT_TRUE(pipeline.idle());
}

TEST_F(PipelineTest, ACallCancelledInFlightNeitherTimesOutNorFailsNorGoesOutAgain) {
  pipeline.on_connected(t0);
  push("a", Request::command({"GET", "k"}).retry_safe(), 0ms, 1);
  push("b", Request::command({"GET", "j"}).retry_safe(), 0ms, 2);
  write_all();
  EXPECT_TRUE(pipeline.cancel(1, Scope::even_if_sent));
  pipeline.on_time(t0 + kTimeout);
  ASSERT_EQ(names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(log[1].error, make_error_code(errc::command_timeout));
  push("c", Request::command({"GET", "c"}).retry_safe(), 10ms, 3);
  write_all();
  EXPECT_TRUE(pipeline.cancel(3, Scope::even_if_sent));
  pipeline.on_lost({make_error_code(errc::connection_lost), "gone"});
  pipeline.on_connected(t0 + 20ms);
  EXPECT_TRUE(pipeline.write().empty()) << "a cancelled call is not sent again";
  pipeline.fail_all({make_error_code(errc::closed), "closed"});
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "b", "c"})) << "each call completes once";
}

TEST_F(PipelineTest, ACallWaitingToGoOutAgainAfterALossMayHaveRun) {
  pipeline.on_connected(t0);
  push("a", Request::command({"GET", "k"}).retry_safe(), 0ms, 1);
  write_all();
  pipeline.on_lost({make_error_code(errc::connection_lost), "gone"});
  EXPECT_FALSE(pipeline.cancel(1, Scope::unsent)) << "it was sent once: it may have run";
  EXPECT_TRUE(pipeline.cancel(1, Scope::even_if_sent));
  ASSERT_EQ(names(), (std::vector<std::string>{"a"}));
  EXPECT_NE(log[0].detail.find("may or may not have run"), std::string::npos) << log[0].detail;
  EXPECT_TRUE(pipeline.idle());
}

TEST(WritesAfterReply, TheFirstReplyThenEveryFourUpToSixteenThenEverySixteen) {
  std::vector<std::size_t> writes;
  for (std::size_t delivered = 1; delivered <= 64; ++delivered)
    if (writes_after_reply(delivered))
      writes.push_back(delivered);
  EXPECT_EQ(writes, (std::vector<std::size_t>{1, 4, 8, 12, 16, 32, 48, 64}));
}

TEST(CancelScope, TerminalReachesSentCallsPartialAndTotalOnlyUnsentOnes) {
  using asio::cancellation_type;
  EXPECT_EQ(cancel_scope(cancellation_type::terminal), Scope::even_if_sent);
  EXPECT_EQ(cancel_scope(cancellation_type::all), Scope::even_if_sent);
  EXPECT_EQ(cancel_scope(cancellation_type::partial), Scope::unsent);
  EXPECT_EQ(cancel_scope(cancellation_type::total), Scope::unsent);
  EXPECT_EQ(cancel_scope(cancellation_type::none), std::nullopt);
}

TEST_F(PipelineTest, WakeAtFollowsTheEarliestDeadline) {
  EXPECT_EQ(pipeline.wake_at(), Clock::time_point::max());
  push("a", echo("a"), 30ms);
  EXPECT_EQ(pipeline.wake_at(), t0 + 30ms + kTimeout);
  push("b", echo("b"), 40ms);
  EXPECT_EQ(pipeline.wake_at(), t0 + 30ms + kTimeout);
  pipeline.on_time(t0 + 30ms + kTimeout);
  EXPECT_EQ(pipeline.wake_at(), t0 + 40ms + kTimeout);
}

}  // namespace
}  // namespace leasehold::detail
