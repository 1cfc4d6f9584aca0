// Client::close(drain): a program about to exit waits until the requests the client sent on its
// own account — here the release of an acquire cancelled after it was sent — are answered, so that
// no lease it may have taken is left behind. Against the fake peer, which answers that release
// only when the test lets it.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <future>
#include <string>

#include "eventually.hpp"
#include "fake_peer.hpp"
#include "leasehold/client.hpp"
#include "leasehold/lock.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::FakePeer;
using testing::PeerAction;
using testing::PeerEvent;
namespace resp = testing::resp;

bool is_script(const std::vector<std::string>& command) {
  return !command.empty() && (command[0] == "EVAL" || command[0] == "EVALSHA");
}

// The commands of the first connection that satisfy `match`.
template <class Match>
std::size_t received(const FakePeer& peer, Match match) {
  std::size_t count = 0;
  for (const auto& command : peer.commands(0))
    count += match(command) ? 1 : 0;
  return count;
}

TEST(DrainingClose, ReturnsOnlyOnceTheReleaseOfACancelledAcquireIsAnswered) {
  std::promise<void> let_answer;
  const std::shared_future<void> answer_allowed = let_answer.get_future().share();
  FakePeer peer([answer_allowed](const PeerEvent& event) {
    // A server that stalls: the acquire is answered only with the release after it, both when
    // the test says so (replies keep the order of the calls).
    if (event.step >= 1 && !event.command.empty() && event.command[0] == "SET")
      return PeerAction::nothing();
    if (event.step >= 1 && is_script(event.command)) {
      answer_allowed.wait();
      return PeerAction::send(resp::nil() + resp::integer(1));
    }
    return testing::answer_like_redis(event);
  });
  // Whatever happens below, the peer's thread is let go before the peer is destroyed.
  struct LetGo {
    std::promise<void>& promise;
    bool done = false;
    void operator()() {
      if (!std::exchange(done, true))
        promise.set_value();
    }
    ~LetGo() { (*this)(); }
  } let_go{let_answer};

  ClientOptions options;
  options.command_timeout = 10s;  // the release is answered or dropped by the test, not by time
  options.warn_on_eviction_policy = false;
  Client client(peer.url(), options);
  client.connect();
  const Lock<std::string> locks("invoice", 30s);
  asio::cancellation_signal cancel;
  std::promise<std::error_code> acquire_ended;
  client.async_process(locks.try_lock("42"),
                       asio::bind_cancellation_slot(cancel.slot(), [&](std::error_code ec, auto) {
                         acquire_ended.set_value(ec);
                       }));
  ASSERT_TRUE(eventually([&] {
    return received(peer, [](const auto& c) { return !c.empty() && c[0] == "SET"; }) == 1;
  }));
  cancel.emit(asio::cancellation_type::terminal);  // sent, so its outcome is unknown: released
  EXPECT_EQ(acquire_ended.get_future().get(), asio::error::operation_aborted);
  ASSERT_TRUE(eventually([&] { return received(peer, is_script) == 1; })) << "no release sent";

  auto closing = std::async(std::launch::async, [&] { client.close(10s); });
  EXPECT_EQ(closing.wait_for(300ms), std::future_status::timeout)
      << "close() returned before the release was answered";
  let_go();
  EXPECT_EQ(closing.wait_for(5s), std::future_status::ready)
      << "close() did not return once it was";
}

}  // namespace
}  // namespace leasehold
