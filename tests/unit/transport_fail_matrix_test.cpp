// The transport against a fake peer (tests/support/fake_peer.hpp) that misbehaves on cue.
//
// The fail matrix runs one fixed conversation: the handshake (step 0: the peer accepts; step 1:
// CLIENT SETNAME; step 2: PING; step 3: TIME; step 4: HELLO, all in one write) and then three
// pipelined calls (steps 5-7: ECHO a, ECHO b, ECHO c; as three calls or as one batch). For every
// step k it runs once with the peer closing the connection at k and once with the peer stalling at
// k (it stops reading and writing, the socket stays open). Every call must end with a defined
// outcome within a deadline: success before the fault, and the fault's error for the faulted call
// and those after it. Then the peer heals, and the client must recover.
#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fake_peer.hpp"
#include "leasehold/client.hpp"
#include "leasehold/query.hpp"

namespace leasehold {

namespace {

using namespace std::chrono_literals;
using testing::answer_like_redis;
using testing::FakePeer;
using testing::PeerAction;
using testing::PeerEvent;
namespace resp = testing::resp;
using Commands = std::vector<std::vector<std::string>>;

// Every outcome here is due within about a second (the timeouts are 250 ms): waiting longer than
// this means a hang.
constexpr auto kDeadline = 10s;

ClientOptions fast_options() {
  ClientOptions options;
  options.connect_timeout = 250ms;
  options.command_timeout = 250ms;
  options.reconnect_delay_min = 5ms;
  options.reconnect_delay_max = 20ms;
  // The peer scripts count every command: no INFO after connecting.
  options.warn_on_eviction_policy = false;
  return options;
}

// For tests that are not about timeouts: slow machines (sanitizers, parallel runs) must not fail
// them. Reconnecting stays fast.
ClientOptions patient_options() {
  ClientOptions options = fast_options();
  options.connect_timeout = 5s;
  options.command_timeout = 5s;
  return options;
}

struct Outcome {
  std::error_code error;
  Reply reply;
};

// "The call succeeded with `expected`", printed readably on failure (GoogleTest would print a
// Reply as raw bytes).
::testing::AssertionResult replied(const Outcome& outcome, const Reply& expected) {
  if (!outcome.error && outcome.reply == expected)
    return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << "expected " << to_string(expected) << ", got ";
  if (outcome.error)
    failure << "error " << outcome.error.message();
  else
    failure << to_string(outcome.reply);
  return failure;
}

struct BatchOutcome {
  std::error_code error;
  std::vector<Result<Reply>> results;
};

// The outcome, or a test failure if none comes before the deadline; then the client is closed,
// which ends every call with errc::closed, so that the test fails instead of hanging.
template <class T>
T await(std::future<T>& future, Client& client) {
  if (future.wait_for(kDeadline) != std::future_status::ready) {
    ADD_FAILURE() << "no outcome within " << kDeadline.count() << " s: the call hangs";
    client.close();
  }
  return future.get();
}

std::future<Outcome> start_call(Client& client, const Command& command) {
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  client.async_process(command, [promise](std::error_code ec, Reply reply) {
    promise->set_value({ec, std::move(reply)});
  });
  return future;
}

Outcome run_call(Client& client, const Command& command) {
  auto future = start_call(client, command);
  return await(future, client);
}

// Starts the calls together on the client's strand: they are queued before the writer runs, so they
// go out pipelined, in one write.
std::vector<std::future<Outcome>> start_pipelined(Client& client, std::vector<Command> commands) {
  std::vector<std::shared_ptr<std::promise<Outcome>>> promises;
  std::vector<std::future<Outcome>> futures;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    promises.push_back(std::make_shared<std::promise<Outcome>>());
    futures.push_back(promises.back()->get_future());
  }
  asio::post(client.get_executor(), [&client, commands = std::move(commands), promises] {
    for (std::size_t i = 0; i < commands.size(); ++i) {
      client.async_process(commands[i], [promise = promises[i]](std::error_code ec, Reply reply) {
        promise->set_value({ec, std::move(reply)});
      });
    }
  });
  return futures;
}

std::future<BatchOutcome> start_batch(Client& client, const std::vector<Command>& batch) {
  auto promise = std::make_shared<std::promise<BatchOutcome>>();
  auto future = promise->get_future();
  client.async_process(std::span<const Command>(batch),
                       [promise](std::error_code ec, std::vector<Result<Reply>> results) {
                         promise->set_value({ec, std::move(results)});
                       });
  return future;
}

// The outcome of the next connection attempt (at once if connected).
std::error_code connect(Client& client) {
  auto promise = std::make_shared<std::promise<std::error_code>>();
  auto future = promise->get_future();
  client.async_connect([promise](std::error_code ec) { promise->set_value(ec); });
  return await(future, client);
}

// Until connected: an attempt that was under way when the peer healed may still fail.
void reconnect(Client& client) {
  const auto deadline = Clock::now() + kDeadline;
  std::error_code ec = connect(client);
  while (ec && Clock::now() < deadline)
    ec = connect(client);
  ASSERT_FALSE(ec) << "no connection after the peer healed: " << ec.message();
}

std::vector<std::string> handshake() {
  return {"CLIENT", "SETNAME", "leasehold"};
}

bool is(const PeerEvent& event, std::string_view name) {
  return !event.command.empty() && event.command[0] == name;
}

// --- The fail matrix -----------------------------------------------------------------------------

enum class Fault { close, stall };
enum class Shape { calls, batch };

struct MatrixCase {
  std::size_t step;
  Fault fault;
  Shape shape;
};
void PrintTo(const MatrixCase& c, std::ostream* out) {
  *out << "step " << c.step << (c.fault == Fault::close ? " close" : " stall")
       << (c.shape == Shape::calls ? " calls" : " batch");
}

// 0 accept, 1 CLIENT SETNAME, 2 PING, 3 TIME, 4 HELLO
constexpr std::size_t kLastHandshakeStep = 4;
constexpr std::size_t kFirstCallStep = 5;  // 5 ECHO a, 6 ECHO b, 7 ECHO c
const char* const kWords[] = {"a", "b", "c"};
const char* const kStepNames[] = {"accept", "setname", "ping",   "time",
                                  "hello",  "echo_a",  "echo_b", "echo_c"};

std::vector<Command> conversation() {
  return {Command{"ECHO", kWords[0]}, Command{"ECHO", kWords[1]}, Command{"ECHO", kWords[2]}};
}

Commands expected_log() {
  return {handshake(),   {"PING"},      {"TIME"},     {"HELLO", "2"},
          {"ECHO", "a"}, {"ECHO", "b"}, {"ECHO", "c"}};
}

// The three calls, pipelined, and their outcomes in order.
std::vector<Outcome> converse(Client& client, Shape shape) {
  std::vector<Outcome> outcomes;
  if (shape == Shape::calls) {
    for (auto& future : start_pipelined(client, conversation()))
      outcomes.push_back(await(future, client));
    return outcomes;
  }
  const std::vector<Command> batch = conversation();
  auto future = start_batch(client, batch);
  BatchOutcome outcome = await(future, client);
  if (outcome.error)
    return std::vector<Outcome>(batch.size(), Outcome{outcome.error, {}});
  EXPECT_EQ(outcome.results.size(), batch.size());
  for (Result<Reply>& result : outcome.results)
    outcomes.push_back(result ? Outcome{{}, *result} : Outcome{result.error(), {}});
  return outcomes;
}

void expect_all_succeed(const std::vector<Outcome>& outcomes) {
  ASSERT_EQ(outcomes.size(), 3u);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_FALSE(outcomes[i].error) << "call " << i << ": " << outcomes[i].error.message();
    EXPECT_TRUE(replied(outcomes[i], Reply::make_string(kWords[i]))) << "call " << i;
  }
}

class FailMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(FailMatrix, EveryCallEndsWithADefinedOutcomeThenTheClientRecovers) {
  const MatrixCase c = GetParam();
  std::atomic<bool> healed{false};
  // The fault hits step k of every connection until the peer heals.
  FakePeer peer([&](const PeerEvent& event) {
    if (!healed && event.step == c.step)
      return c.fault == Fault::close ? PeerAction::close() : PeerAction::stall();
    return answer_like_redis(event);
  });
  Client client(peer.url(), fast_options());

  if (c.step <= kLastHandshakeStep) {
    // A call made meanwhile waits for a connection, up to the command timeout.
    auto early = start_call(client, Command{"ECHO", "early"});
    EXPECT_EQ(connect(client),
              c.fault == Fault::close ? errc::connect_failed : errc::connect_timeout);
    EXPECT_EQ(await(early, client).error, errc::command_timeout);
    // Whatever reached the peer before the fault is the handshake, in order.
    const Commands log = peer.commands(0);
    const Commands expected = expected_log();
    ASSERT_GE(log.size(), c.step);
    ASSERT_LE(log.size(), kLastHandshakeStep);
    EXPECT_EQ(log, Commands(expected.begin(),
                            expected.begin() + static_cast<std::ptrdiff_t>(log.size())));

    healed = true;
    peer.close_connections();  // the stalled ones
    reconnect(client);
    expect_all_succeed(converse(client, c.shape));
    return;
  }

  ASSERT_FALSE(connect(client));
  const std::vector<Outcome> outcomes = converse(client, c.shape);
  const std::error_code fault_error =
      c.fault == Fault::close ? errc::connection_lost : errc::command_timeout;
  ASSERT_EQ(outcomes.size(), 3u);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const bool before_fault = kFirstCallStep + i < c.step && c.shape == Shape::calls;
    if (before_fault) {
      EXPECT_FALSE(outcomes[i].error) << "call " << i << ": " << outcomes[i].error.message();
      EXPECT_TRUE(replied(outcomes[i], Reply::make_string(kWords[i]))) << "call " << i;
    } else {
      EXPECT_EQ(outcomes[i].error, fault_error)
          << "call " << i << ": " << outcomes[i].error.message();
    }
  }
  // The client sent the whole conversation, in order, on the first connection.
  ASSERT_TRUE(peer.wait_for_commands(0, c.step));
  const Commands log = peer.commands(0);
  const Commands expected = expected_log();
  const auto n = static_cast<std::ptrdiff_t>(c.step);
  EXPECT_EQ(Commands(log.begin(), log.begin() + n),
            Commands(expected.begin(), expected.begin() + n));

  healed = true;
  if (c.fault == Fault::stall)
    peer.close_connections();
  ASSERT_TRUE(peer.wait_for_connections(2)) << "the client did not reconnect";
  reconnect(client);
  expect_all_succeed(converse(client, c.shape));
}

std::vector<MatrixCase> matrix() {
  std::vector<MatrixCase> cases;
  for (Shape shape : {Shape::calls, Shape::batch})
    for (Fault fault : {Fault::close, Fault::stall})
      for (std::size_t step = 0; step <= kFirstCallStep + 2; ++step)
        cases.push_back({step, fault, shape});
  return cases;
}

std::string matrix_name(const ::testing::TestParamInfo<MatrixCase>& info) {
  const MatrixCase& c = info.param;
  return std::string(c.fault == Fault::close ? "close" : "stall") + "_at_" + kStepNames[c.step] +
         (c.shape == Shape::calls ? "_calls" : "_batch");
}

INSTANTIATE_TEST_SUITE_P(Steps, FailMatrix, ::testing::ValuesIn(matrix()), matrix_name);

// --- The handshake -----------------------------------------------------------------------------

TEST(HandshakeOverASocket, IsSetNameThenPing) {
  FakePeer peer;
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(peer.commands(0), (Commands{handshake(), {"PING"}, {"TIME"}, {"HELLO", "2"}}));
}

TEST(HandshakeOverASocket, SendsAuthAndSelectFirst) {
  FakePeer peer;
  Client client("unix://alice:Hunter2Secret@" + peer.socket_path() + "?db=3", patient_options());
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(peer.commands(0), (Commands{{"AUTH", "alice", "Hunter2Secret"},
                                        {"SELECT", "3"},
                                        handshake(),
                                        {"PING"},
                                        {"TIME"},
                                        {"HELLO", "2"}}));
}

TEST(HandshakeOverASocket, PasswordAloneAndNoClientName) {
  FakePeer peer;
  ClientOptions options = patient_options();
  options.client_name.clear();
  Client client("unix://Hunter2Secret@" + peer.socket_path(), options);
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(peer.commands(0),
            (Commands{{"AUTH", "Hunter2Secret"}, {"PING"}, {"TIME"}, {"HELLO", "2"}}));
}

TEST(HandshakeOverASocket, CustomClientName) {
  FakePeer peer;
  ClientOptions options = patient_options();
  options.client_name = "worker-7";
  Client client(peer.url(), options);
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(peer.commands(0),
            (Commands{{"CLIENT", "SETNAME", "worker-7"}, {"PING"}, {"TIME"}, {"HELLO", "2"}}));
}

TEST(HandshakeOverASocket, RefusedSetNameIsNotAnError) {
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "CLIENT"))
      return PeerAction::send(resp::error("NOPERM this user has no permissions to run 'client'"));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  EXPECT_FALSE(connect(client));
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "x"}), Reply::make_string("x")));
}

TEST(HandshakeOverASocket, RefusedAuthIsFatalAndTheMessageHidesThePassword) {
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "AUTH"))
      return PeerAction::send(
          resp::error("WRONGPASS invalid username-password pair or user is disabled."));
    return answer_like_redis(event);
  });
  Client client("unix://alice:Hunter2Secret@" + peer.socket_path(), patient_options());
  try {
    client.connect();
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed);
    const std::string what = e.what();
    EXPECT_NE(what.find("WRONGPASS"), std::string::npos) << what;
    EXPECT_NE(what.find("alice"), std::string::npos) << what;
    EXPECT_EQ(what.find("Hunter2Secret"), std::string::npos) << what;
  }
  // Fatal: every call fails with it, and the client does not try again.
  EXPECT_EQ(run_call(client, Command{"PING"}).error, errc::auth_failed);
  EXPECT_EQ(connect(client), errc::auth_failed);
  EXPECT_EQ(peer.connections(), 1u);
}

TEST(HandshakeOverASocket, RefusedSelectIsFatal) {
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "SELECT"))
      return PeerAction::send(resp::error("ERR DB index is out of range"));
    return answer_like_redis(event);
  });
  Client client(peer.url() + "?db=99", patient_options());
  EXPECT_EQ(connect(client), errc::select_failed);
  EXPECT_EQ(run_call(client, Command{"PING"}).error, errc::select_failed);
  EXPECT_EQ(peer.connections(), 1u);
}

TEST(HandshakeOverASocket, NoAuthOnPingIsAuthFailed) {
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "PING"))
      return PeerAction::send(resp::error("NOAUTH Authentication required."));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  EXPECT_EQ(connect(client), errc::auth_failed);
  EXPECT_EQ(run_call(client, Command{"PING"}).error, errc::auth_failed);
}

TEST(HandshakeOverASocket, LoadingIsRetriedUntilTheServerIsReady) {
  std::atomic<bool> loaded{false};
  FakePeer peer([&](const PeerEvent& event) {
    if (!loaded && is(event, "PING"))
      return PeerAction::send(resp::error("LOADING Redis is loading the dataset in memory"));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  EXPECT_EQ(connect(client), errc::server_loading);
  loaded = true;
  reconnect(client);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "x"}), Reply::make_string("x")));
}

TEST(HandshakeOverASocket, NoListenerIsConnectFailed) {
  FakePeer peer;
  Client client(peer.url() + ".missing", fast_options());
  EXPECT_EQ(connect(client), errc::connect_failed);
  EXPECT_EQ(run_call(client, Command{"PING"}).error, errc::command_timeout);
}

// --- Replies in pieces, large replies -----------------------------------------------------------

TEST(Transport, ReplySplitIntoSingleBytesArrivesIntact) {
  const std::string binary("\0\r\n*$x", 6);
  const Reply expected = Reply::make_array(
      {Reply::make_string(binary), Reply::make_integer(-12), Reply::make_nil(),
       Reply::make_array({Reply::make_status("OK"), Reply::make_error("ERR inside")}),
       Reply::make_string(""), Reply::make_array({})});
  const std::string encoded = resp::array(
      {resp::bulk(binary), resp::integer(-12), resp::nil(),
       resp::array({resp::status("OK"), resp::error("ERR inside")}), resp::bulk(""), "*0\r\n"});
  // Every reply, the handshake's included, goes out one byte at a time.
  FakePeer peer([&](const PeerEvent& event) {
    PeerAction action =
        is(event, "MYCOMMAND") ? PeerAction::send(encoded) : answer_like_redis(event);
    return std::move(action).one_byte_at_a_time();
  });
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  const Outcome outcome = run_call(client, Command{"MYCOMMAND"});
  EXPECT_FALSE(outcome.error) << outcome.error.message();
  EXPECT_TRUE(replied(outcome, expected));
  // The reader is still in step.
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "after"}), Reply::make_string("after")));
  EXPECT_EQ(peer.connections(), 1u);
}

TEST(Transport, OneMebibyteEachWay) {
  std::string payload(1 << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i * 7 + (i >> 11));
  FakePeer peer;
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  const Outcome outcome = run_call(client, Command{"ECHO", payload});
  ASSERT_FALSE(outcome.error) << outcome.error.message();
  EXPECT_TRUE(outcome.reply == Reply::make_string(payload))
      << "a reply of " << outcome.reply.str.size() << " bytes";
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "small"}), Reply::make_string("small")));
}

// --- Protocol violations -----------------------------------------------------------------------

TEST(Transport, GarbageGivesProtocolErrorToTheCallsInFlightThenTheClientReconnects) {
  FakePeer peer([](const PeerEvent& event) {
    if (event.connection == 0 && event.step == kFirstCallStep + 1)
      return PeerAction::send("?garbage\r\n");
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  std::vector<Outcome> outcomes;
  for (auto& future : start_pipelined(client, conversation()))
    outcomes.push_back(await(future, client));
  EXPECT_FALSE(outcomes[0].error);
  EXPECT_TRUE(replied(outcomes[0], Reply::make_string("a")));
  EXPECT_EQ(outcomes[1].error, errc::protocol_error);
  EXPECT_EQ(outcomes[2].error, errc::protocol_error);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "later"}), Reply::make_string("later")));
  EXPECT_EQ(peer.connections(), 2u);
}

TEST(Transport, GarbageInTheHandshakeIsAProtocolError) {
  // On every connection until healed: the attempt connect() waits for is sure to meet it.
  std::atomic<bool> healed{false};
  FakePeer peer([&](const PeerEvent& event) {
    if (!healed && is(event, "PING"))
      return PeerAction::send("?garbage\r\n");
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  EXPECT_EQ(connect(client), errc::protocol_error);
  healed = true;
  reconnect(client);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "x"}), Reply::make_string("x")));
}

TEST(Transport, ReplyNobodyAskedForDropsTheConnection) {
  FakePeer peer([](const PeerEvent& event) {
    if (event.connection == 0 && is(event, "ECHO"))
      return PeerAction::send(resp::bulk(event.command[1]) + resp::status("EXTRA"));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "a"}), Reply::make_string("a")));
  // Nothing was in flight when the extra reply came: the client cannot trust the connection any
  // more, and drops it.
  EXPECT_TRUE(peer.wait_for_disconnect(0));
  ASSERT_TRUE(peer.wait_for_connections(2));
  const Outcome later = run_call(client, Command{"ECHO", "b"});
  EXPECT_FALSE(later.error) << later.error.message();
  EXPECT_TRUE(replied(later, Reply::make_string("b")));
}

// A reply that came with the handshake's but answers nothing must not be taken as the answer to
// the first call made afterwards.
class UnsolicitedDuringHandshake : public ::testing::TestWithParam<bool> {};

TEST_P(UnsolicitedDuringHandshake, IsNeverTakenAsTheReplyToACall) {
  const bool greeting = GetParam();
  FakePeer peer([&](const PeerEvent& event) {
    if (event.connection == 0 && greeting && event.step == 0)
      return PeerAction::send(resp::status("HELLO"));  // before the client said anything
    if (event.connection == 0 && !greeting && is(event, "PING"))
      return PeerAction::send(resp::status("PONG") + resp::status("SURPRISE"));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  (void)connect(client);
  const Outcome outcome = run_call(client, Command{"ECHO", "x"});
  EXPECT_NE(outcome.reply, Reply::make_status("SURPRISE")) << to_string(outcome.reply);
  EXPECT_NE(outcome.reply, Reply::make_status("PONG")) << to_string(outcome.reply);
  if (outcome.error)
    EXPECT_EQ(outcome.error, errc::protocol_error) << outcome.error.message();
  else
    EXPECT_TRUE(replied(outcome, Reply::make_string("x")));
}

INSTANTIATE_TEST_SUITE_P(Transport, UnsolicitedDuringHandshake, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "GreetingOnAccept" : "ExtraReplyAfterPong";
                         });

// A greeting shifts the setup's replies by one. Here the last of them (PONG, held back until the
// peer's next send) comes only after the client's first call: taken for that call's reply unless
// the setup checks what each of its steps was answered.
TEST(Transport, AGreetingThatShiftsTheSetupRepliesFailsTheSetup) {
  FakePeer peer([&](const PeerEvent& event) {
    if (event.connection == 0 && event.step == 0)
      return PeerAction::send(resp::status("HELLO"));
    if (event.connection == 0 && is(event, "PING"))
      return PeerAction::send(resp::status("PONG")).deferred();
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  reconnect(client);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "x"}), Reply::make_string("x")));
  // The client gave up the first connection after its setup, before any call.
  EXPECT_TRUE(peer.wait_for_disconnect(0));
  EXPECT_EQ(peer.commands(0), (Commands{handshake(), {"PING"}, {"TIME"}, {"HELLO", "2"}}));
}

// --- Reconnecting, and what happens to the calls in flight -------------------------------------

TEST(Transport, ReconnectsAfterThePeerClosesAnIdleConnection) {
  FakePeer peer;
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "1"}), Reply::make_string("1")));
  peer.close_connections();
  ASSERT_TRUE(peer.wait_for_connections(2));
  reconnect(client);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "2"}), Reply::make_string("2")));
  EXPECT_EQ(peer.commands(1),
            (Commands{handshake(), {"PING"}, {"TIME"}, {"HELLO", "2"}, {"ECHO", "2"}}));
}

// The first call after the handshake on the first connection makes the peer close it.
PeerAction close_at_first_call(const PeerEvent& event) {
  if (event.connection == 0 && event.step == kFirstCallStep)
    return PeerAction::close();
  return answer_like_redis(event);
}

TEST(Transport, RetrySafeCallInFlightIsResentOnTheNewConnection) {
  FakePeer peer(close_at_first_call);
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  const Outcome outcome = run_call(client, Command{"GET", "k"}.retry_safe());
  EXPECT_FALSE(outcome.error) << outcome.error.message();
  EXPECT_TRUE(replied(outcome, Reply::make_nil()));
  EXPECT_EQ(peer.commands(0).back(), (std::vector<std::string>{"GET", "k"}));
  EXPECT_EQ(peer.commands(1),
            (Commands{handshake(), {"PING"}, {"TIME"}, {"HELLO", "2"}, {"GET", "k"}}));
}

TEST(Transport, CallInFlightThatIsNotRetrySafeFailsAndIsNotResent) {
  FakePeer peer(close_at_first_call);
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(run_call(client, Command{"INCR", "k"}).error, errc::connection_lost);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "z"}), Reply::make_string("z")));
  EXPECT_EQ(peer.commands(0).back(), (std::vector<std::string>{"INCR", "k"}));
  EXPECT_EQ(peer.commands(1),
            (Commands{handshake(), {"PING"}, {"TIME"}, {"HELLO", "2"}, {"ECHO", "z"}}));
}

TEST(Transport, BatchIsResentOnlyIfEveryRequestIsRetrySafe) {
  {
    FakePeer peer(close_at_first_call);
    Client client(peer.url(), patient_options());
    ASSERT_FALSE(connect(client));
    const std::vector<Command> batch = {Command{"GET", "a"}.retry_safe(),
                                        Command{"ECHO", "b"}.retry_safe()};
    auto future = start_batch(client, batch);
    BatchOutcome outcome = await(future, client);
    ASSERT_FALSE(outcome.error) << outcome.error.message();
    ASSERT_EQ(outcome.results.size(), 2u);
    EXPECT_EQ(outcome.results[0].value(), Reply::make_nil());
    EXPECT_EQ(outcome.results[1].value(), Reply::make_string("b"));
  }
  {
    FakePeer peer(close_at_first_call);
    Client client(peer.url(), patient_options());
    ASSERT_FALSE(connect(client));
    const std::vector<Command> batch = {Command{"GET", "a"}.retry_safe(), Command{"INCR", "b"}};
    auto future = start_batch(client, batch);
    EXPECT_EQ(await(future, client).error, errc::connection_lost);
    EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "z"}), Reply::make_string("z")));
    EXPECT_EQ(peer.commands(1),
              (Commands{handshake(), {"PING"}, {"TIME"}, {"HELLO", "2"}, {"ECHO", "z"}}));
  }
}

TEST(Transport, RetrySafeCallAgainstAPeerThatAlwaysClosesTimesOut) {
  FakePeer peer([](const PeerEvent& event) {
    if (event.step == kFirstCallStep)
      return PeerAction::close();
    return answer_like_redis(event);
  });
  Client client(peer.url(), fast_options());
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(run_call(client, Command{"GET", "k"}.retry_safe()).error, errc::command_timeout);
  EXPECT_GE(peer.connections(), 2u);  // it was sent again at least once
}

// --- Timeouts and matching ----------------------------------------------------------------------

TEST(Transport, LateReplyToATimedOutCallIsDroppedNotGivenToTheNextCall) {
  // The reply to "slow" is held back until the next command arrives.
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "ECHO") && event.command[1] == "slow")
      return answer_like_redis(event).deferred();
    return answer_like_redis(event);
  });
  Client client(peer.url(), fast_options());
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(run_call(client, Command{"ECHO", "slow"}).error, errc::command_timeout);
  const Outcome next = run_call(client, Command{"ECHO", "next"});
  EXPECT_FALSE(next.error) << next.error.message();
  EXPECT_TRUE(replied(next, Reply::make_string("next")));
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "then"}), Reply::make_string("then")));
  EXPECT_EQ(peer.connections(), 1u);
}

// A connection that falls silent (no FIN, no RST: the peer keeps the socket and answers nothing)
// is replaced once nothing came for twice the command timeout since a call that timed out.
TEST(Transport, ASilentConnectionIsReplacedWithinTwiceTheCommandTimeout) {
  FakePeer peer([](const PeerEvent& event) {
    if (event.connection == 0 && event.step == kFirstCallStep)
      return PeerAction::stall();
    return answer_like_redis(event);
  });
  Client client(peer.url(), fast_options());
  ASSERT_FALSE(connect(client));
  const auto made = std::chrono::steady_clock::now();
  EXPECT_EQ(run_call(client, Command{"ECHO", "lost"}).error, errc::command_timeout);
  ASSERT_TRUE(peer.wait_for_connections(2)) << "the silent connection was never replaced";
  // Not before twice the command timeout (250 ms): a paused server may still answer.
  EXPECT_GE(std::chrono::steady_clock::now() - made, 500ms);
  reconnect(client);
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "back"}), Reply::make_string("back")));
}

// A call that times out on a server that then answers (paused, then resumed) keeps the connection.
TEST(Transport, AConnectionThatAnswersLateIsKept) {
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "ECHO") && event.command[1] == "slow")
      return answer_like_redis(event).deferred();
    return answer_like_redis(event);
  });
  Client client(peer.url(), fast_options());
  ASSERT_FALSE(connect(client));
  EXPECT_EQ(run_call(client, Command{"ECHO", "slow"}).error, errc::command_timeout);
  // The next call's reply comes after slow's, well within twice the timeout of slow.
  EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "next"}), Reply::make_string("next")));
  // Past the silence limit of the first call: the connection answered, so it stays.
  const auto until = std::chrono::steady_clock::now() + 600ms;
  while (std::chrono::steady_clock::now() < until)
    EXPECT_TRUE(replied(run_call(client, Command{"ECHO", "more"}), Reply::make_string("more")));
  EXPECT_EQ(peer.connections(), 1u);
}

TEST(Transport, SyncCallThatTimesOutThrowsCommandTimeout) {
  FakePeer peer([](const PeerEvent& event) {
    if (event.step == kFirstCallStep)
      return PeerAction::stall();
    return answer_like_redis(event);
  });
  Client client(peer.url(), fast_options());
  ASSERT_FALSE(connect(client));
  auto call = std::async(std::launch::async, [&] {
    try {
      client.process(Command{"ECHO", "a"});
      return std::error_code{};
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("250 ms"), std::string::npos) << e.what();
      return e.code();
    }
  });
  if (call.wait_for(kDeadline) != std::future_status::ready) {
    ADD_FAILURE() << "process() hangs";
    client.close();
  }
  EXPECT_EQ(call.get(), errc::command_timeout);
}

TEST(Transport, CallsFromSeveralThreadsArePipelinedAndEachGetsItsOwnReply) {
  // The peer holds its replies until the third call arrives: the three are in flight at once.
  FakePeer peer([](const PeerEvent& event) {
    if (event.step == kFirstCallStep || event.step == kFirstCallStep + 1)
      return answer_like_redis(event).deferred();
    return answer_like_redis(event);
  });
  ClientOptions options = patient_options();
  options.command_timeout = 5s;  // the threads start when they start
  Client client(peer.url(), options);
  ASSERT_FALSE(connect(client));
  std::vector<std::future<Outcome>> calls;
  for (const char* word : {"one", "two", "three"}) {
    calls.push_back(std::async(std::launch::async, [&client, word] {
      std::error_code ec;
      Reply reply = client.process(Command{"ECHO", word}, ec);
      return Outcome{ec, std::move(reply)};
    }));
  }
  bool hung = false;
  for (auto& call : calls)
    hung = hung || call.wait_for(kDeadline) != std::future_status::ready;
  if (hung) {
    ADD_FAILURE() << "process() hangs";
    client.close();
  }
  const char* words[] = {"one", "two", "three"};
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Outcome outcome = calls[i].get();
    EXPECT_FALSE(outcome.error) << outcome.error.message();
    EXPECT_TRUE(replied(outcome, Reply::make_string(words[i])));
  }
  EXPECT_EQ(peer.connections(), 1u);
}

TEST(Transport, CloseEndsTheCallsInFlightAndLaterOnes) {
  FakePeer peer([](const PeerEvent& event) {
    if (event.step == kFirstCallStep)
      return PeerAction::stall();
    return answer_like_redis(event);
  });
  ClientOptions options = patient_options();
  options.command_timeout = 60s;  // only close() can end the call
  Client client(peer.url(), options);
  ASSERT_FALSE(connect(client));
  auto stalled = start_call(client, Command{"ECHO", "a"});
  ASSERT_TRUE(peer.wait_for_commands(0, kFirstCallStep));
  client.close();
  EXPECT_EQ(await(stalled, client).error, errc::closed);
  EXPECT_EQ(run_call(client, Command{"PING"}).error, errc::closed);
  EXPECT_EQ(connect(client), errc::closed);
}

// --- Scripts ------------------------------------------------------------------------------------

// A script call as a query.
struct ScriptCall {
  using result_type = Reply;
  const Script* script;
  std::vector<std::string> keys;
  std::vector<std::string> args;

  Request request() const {
    const std::vector<std::string_view> k(keys.begin(), keys.end());
    const std::vector<std::string_view> a(args.begin(), args.end());
    return Request::script(*script, k, a);
  }
  Result<Reply> parse(Reply reply, const Timing&) const {
    if (reply.is_error())
      return error_result<Reply>(reply);
    return reply;
  }
};

// A script's first call on a connection is EVAL, which loads it; later ones are EVALSHA, and one
// that a server which lost its scripts answers NOSCRIPT goes out again as EVAL.
TEST(Transport, AScriptIsLoadedByItsFirstCallAndNoScriptFallsBackToEval) {
  const Script script("return 42");
  FakePeer peer([](const PeerEvent& event) {
    if (is(event, "EVALSHA"))
      return PeerAction::send(resp::error("NOSCRIPT No matching script. Please use EVAL."));
    if (is(event, "EVAL"))
      return PeerAction::send(resp::integer(42));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  for (int call = 0; call < 2; ++call) {
    std::error_code ec;
    const Reply reply = client.process(ScriptCall{&script, {"k"}, {"v"}}, ec);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(reply, Reply::make_integer(42)) << to_string(reply);
  }
  EXPECT_EQ(peer.commands(0), (Commands{handshake(),
                                        {"PING"},
                                        {"TIME"},
                                        {"HELLO", "2"},
                                        {"EVAL", "return 42", "1", "k", "v"},
                                        {"EVALSHA", script.sha1(), "1", "k", "v"},
                                        {"EVAL", "return 42", "1", "k", "v"}}));
}

// The script calls that Redis answered NOSCRIPT go out again as EVAL in the order they were first
// sent, and before any call written after them.
TEST(Transport, NoScriptResendsKeepTheOrderOfThePipeline) {
  const Script script("return ARGV[1]");
  const auto noscript = resp::error("NOSCRIPT No matching script. Please use EVAL.");
  FakePeer peer([&](const PeerEvent& event) {
    if (is(event, "EVALSHA") && event.command.back() != "d")
      return PeerAction::send(noscript).deferred();  // all four come back together
    if (is(event, "EVALSHA"))
      return PeerAction::send(noscript);
    if (is(event, "EVAL"))
      return PeerAction::send(resp::bulk(event.command.back()));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  client.process(ScriptCall{&script, {"k"}, {"loaded"}});  // EVAL: the script is loaded
  std::vector<std::shared_ptr<std::promise<std::error_code>>> done;
  for (const char* arg : {"a", "b", "c", "d"}) {
    auto promise = std::make_shared<std::promise<std::error_code>>();
    done.push_back(promise);
    client.async_process(ScriptCall{&script, {"k"}, {arg}},
                         [promise](std::error_code ec, Reply) { promise->set_value(ec); });
  }
  for (auto& promise : done) {
    auto future = promise->get_future();
    ASSERT_EQ(future.wait_for(kDeadline), std::future_status::ready);
    EXPECT_FALSE(future.get());
  }
  const Commands log = peer.commands(0);
  std::vector<std::string> evals;
  for (const auto& command : log)
    if (command.front() == "EVAL")
      evals.push_back(command.back());
  EXPECT_EQ(evals, (std::vector<std::string>{"loaded", "a", "b", "c", "d"}));
}

// A script call still in flight behind one answered NOSCRIPT may come back NOSCRIPT too: the
// first one's EVAL waits for it, so that a call made in between never overtakes either.
TEST(Transport, ACallMadeAfterANoScriptReplyWaitsForTheResentScriptCalls) {
  const Script script("return ARGV[1]");
  const auto noscript = resp::error("NOSCRIPT No matching script. Please use EVAL.");
  FakePeer peer([&](const PeerEvent& event) {
    if (is(event, "EVALSHA") && event.command.back() == "a")
      return PeerAction::send(noscript).deferred();
    if (is(event, "GET"))
      return PeerAction::send(resp::nil()).deferred();
    if (is(event, "EVALSHA"))  // "b": a's and GET's replies first, each read on its own
      return PeerAction::send(noscript).one_byte_at_a_time();
    if (is(event, "EVAL"))
      return PeerAction::send(resp::bulk(event.command.back()));
    return answer_like_redis(event);
  });
  Client client(peer.url(), patient_options());
  ASSERT_FALSE(connect(client));
  client.process(ScriptCall{&script, {"k"}, {"loaded"}});  // EVAL: the script is loaded
  auto all_done = std::make_shared<std::promise<void>>();
  auto left = std::make_shared<std::atomic<int>>(4);
  const auto one_done = [all_done, left](std::error_code ec, auto&&...) {
    EXPECT_FALSE(ec) << ec.message();
    if (--*left == 0)
      all_done->set_value();
  };
  client.async_process(ScriptCall{&script, {"k"}, {"a"}}, one_done);
  // GET's reply comes after a's NOSCRIPT and before b's: the SET made then is written after b.
  client.async_process(Command{"GET", "k"}, [&client, one_done](std::error_code ec, Reply) {
    one_done(ec);
    client.async_process(Command{"SET", "k", "v"}, one_done);
  });
  client.async_process(ScriptCall{&script, {"k"}, {"b"}}, one_done);
  auto future = all_done->get_future();
  ASSERT_EQ(future.wait_for(kDeadline), std::future_status::ready);
  Commands log = peer.commands(0);
  ASSERT_GE(log.size(), 6u);
  log.erase(log.begin(), log.end() - 6);  // the handshake
  for (auto& command : log)
    command.resize(1);  // the command names say the order
  EXPECT_EQ(log, (Commands{{"EVALSHA"}, {"GET"}, {"EVALSHA"}, {"EVAL"}, {"EVAL"}, {"SET"}}));
}

}  // namespace
}  // namespace leasehold
