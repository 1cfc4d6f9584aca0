// Taking a lock in turn against a real redis-server: waiters are granted in the order they first
// asked, a waiter that stops asking loses its place when its ticket runs out, try_lock takes a free
// lock whoever waits, and leaving the queue lets the next one move up.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "leasehold/leasehold.hpp"
#include "redis_server.hpp"
#include "scripts.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

class QueueTest : public testing::SharedServerTest {
 protected:
  std::string name_ = "q" + std::to_string(unique_number());
  Lock<std::string> locks_{"queue", 10s};
  Client redis_{server_->unix_url()};

  Turn<Lock<std::string>> try_in_turn(const WaitTicket& ticket) {
    return redis_.process(try_lock_in_turn(locks_, name_, ticket));
  }
};

TEST_F(QueueTest, AFreeLockWithNobodyWaitingIsGrantedAtOnceAndLeavesNoQueue) {
  const WaitTicket ticket;
  const auto turn = try_in_turn(ticket);
  ASSERT_TRUE(turn.token);
  EXPECT_EQ(turn.token->id(), ticket.id);
  EXPECT_EQ(server_->command({"GET", locks_.key(name_)}).str, ticket.value());
  EXPECT_EQ(server_
                ->command({"EXISTS", detail::queue_key(locks_.key(name_)),
                           detail::tickets_key(locks_.key(name_))})
                .integer,
            0);
  const auto again = try_in_turn(ticket);  // a retry finds its own lease
  ASSERT_TRUE(again.token);
  EXPECT_TRUE(redis_.process(again.token->release()));
}

TEST_F(QueueTest, WaitersAreGrantedInTheOrderTheyFirstAsked) {
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  std::vector<WaitTicket> waiters(5);
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    const auto turn = try_in_turn(waiters[i]);
    EXPECT_FALSE(turn.token);
    EXPECT_EQ(turn.position, i + 1);
    EXPECT_GT(turn.holder_ttl, 9s);
    EXPECT_LE(turn.holder_ttl, 10s);
  }
  ASSERT_TRUE(redis_.process(holder->release()));
  // Asked in reverse order: only the head is granted, each time.
  for (std::size_t granted = 0; granted < waiters.size(); ++granted) {
    for (std::size_t i = waiters.size(); i-- > granted + 1;) {
      const auto turn = try_in_turn(waiters[i]);
      EXPECT_FALSE(turn.token) << "waiter " << i << " went ahead of waiter " << granted;
      EXPECT_EQ(turn.position, i - granted + 1);
      EXPECT_EQ(turn.holder_ttl, 0ms) << "free, but not this waiter's turn";
      EXPECT_GT(turn.head_ticket_ttl, 0ms);
    }
    const auto turn = try_in_turn(waiters[granted]);
    ASSERT_TRUE(turn.token) << "the head, waiter " << granted << ", was not granted";
    ASSERT_TRUE(redis_.process(turn.token->release()));
  }
}

TEST_F(QueueTest, AWaiterThatStopsAskingLosesItsPlaceWhenItsTicketRunsOut) {
  const WaitTicket gone{LeaseId::generate(), 300ms};
  const WaitTicket next;
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  EXPECT_EQ(try_in_turn(gone).position, 1u);
  const auto behind = try_in_turn(next);
  EXPECT_EQ(behind.position, 2u);
  EXPECT_LE(behind.head_ticket_ttl, 300ms);
  ASSERT_TRUE(redis_.process(holder->release()));
  EXPECT_FALSE(try_in_turn(next).token) << "the head's ticket still runs";
  EXPECT_TRUE(eventually([&] { return try_in_turn(next).token.has_value(); }, 3s, 50ms))
      << "a dead head kept its place past its ticket";
}

// A head told of a release that does not take the lock (it died, or it is stalled): the waiter
// behind it, told too, cuts the head's ticket to its grace, and takes the lock once the grace is
// over, whatever the head's ticket said. A head that lives queues again, at the back.
TEST_F(QueueTest, AHeadThatDoesNotTakeAFreeLockLosesItsTurnAfterTheGrace) {
  const WaitTicket stalled{LeaseId::generate(), 20s};
  WaitTicket next;
  next.grace = 200ms;
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  EXPECT_EQ(try_in_turn(stalled).position, 1u);
  EXPECT_GT(try_in_turn(next).head_ticket_ttl, 10s);
  ASSERT_TRUE(redis_.process(holder->release()));
  const Clock::time_point told_at = Clock::now();
  const auto behind = try_in_turn(next);
  EXPECT_FALSE(behind.token) << "the head has its grace";
  EXPECT_EQ(behind.position, 2u);
  EXPECT_EQ(behind.holder_ttl, 0ms) << "the lock is free";
  EXPECT_GT(behind.head_ticket_ttl, 0ms);
  EXPECT_LE(behind.head_ticket_ttl, 200ms);
  std::optional<LockToken<Lock<std::string>>> got;
  EXPECT_TRUE(eventually(
      [&] {
        got = try_in_turn(next).token;
        return got.has_value();
      },
      3s, 20ms));
  EXPECT_GE(Clock::now() - told_at, 190ms) << "the head's grace was cut short";
  EXPECT_LT(Clock::now() - told_at, 200ms + 500ms);
  const auto again = try_in_turn(stalled);
  EXPECT_FALSE(again.token);
  EXPECT_EQ(again.position, 1u) << "queued again, behind no one but the holder";
  ASSERT_TRUE(got);
  EXPECT_TRUE(redis_.process(got->release()));
  EXPECT_TRUE(redis_.process(leave_queue(locks_, name_, stalled)));
}

TEST_F(QueueTest, TryLockTakesAFreeLockWhoeverWaitsAndLeavingTheQueueLetsTheNextMoveUp) {
  const WaitTicket first;
  const WaitTicket second;
  auto holder = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(holder);
  try_in_turn(first);
  try_in_turn(second);
  ASSERT_TRUE(redis_.process(holder->release()));
  auto barger = redis_.process(locks_.try_lock(name_));
  ASSERT_TRUE(barger) << "try_lock never waits, nor queues";
  ASSERT_TRUE(redis_.process(barger->release()));
  EXPECT_TRUE(redis_.process(leave_queue(locks_, name_, first)));
  EXPECT_FALSE(redis_.process(leave_queue(locks_, name_, first))) << "gone already";
  const auto turn = try_in_turn(second);
  ASSERT_TRUE(turn.token) << "the waiter behind one that left is next";
  EXPECT_TRUE(redis_.process(turn.token->release()));
}

TEST_F(QueueTest, AFencedLockGrantedInTurnGetsTheNextFencingNumber) {
  const Lock<std::string> fenced = Lock<std::string>("queue-fenced", 10s).with_fencing();
  auto first = redis_.process(fenced.try_lock(name_));
  ASSERT_TRUE(first);
  const WaitTicket ticket;
  EXPECT_FALSE(redis_.process(try_lock_in_turn(fenced, name_, ticket)).token);
  ASSERT_TRUE(redis_.process(first->release()));
  const auto turn = redis_.process(try_lock_in_turn(fenced, name_, ticket));
  ASSERT_TRUE(turn.token);
  ASSERT_TRUE(turn.token->fence());
  EXPECT_GT(*turn.token->fence(), *first->fence());
  const auto retry = redis_.process(try_lock_in_turn(fenced, name_, ticket));
  ASSERT_TRUE(retry.token);
  EXPECT_EQ(retry.token->fence(), turn.token->fence()) << "a retry is no new grant";
}

TEST_F(QueueTest, AKeyOfTheWrongTypeIsAClearError) {
  server_->command({"RPUSH", locks_.key(name_), "x"});
  std::error_code ec;
  redis_.process(try_lock_in_turn(locks_, name_, WaitTicket{}), ec);
  EXPECT_EQ(ec, errc::wrong_type);
}

TEST_F(QueueTest, AWaiterMarksTheHeldKeyWithTheHeadAndTheHolderStillOwnsIt) {
  const std::string key = locks_.key(name_);
  const auto take = locks_.try_lock(name_);
  auto holder = redis_.process(take);
  ASSERT_TRUE(holder);
  const std::string held = holder->value();
  EXPECT_EQ(server_->command({"GET", key}).str, held) << "nobody waits: the bare id";
  const WaitTicket first;
  const WaitTicket second;
  EXPECT_FALSE(try_in_turn(first).token);
  EXPECT_EQ(server_->command({"GET", key}).str, held + ":" + first.value());
  EXPECT_GT(server_->command({"PTTL", key}).integer, 9000) << "marking keeps the lease's TTL";
  EXPECT_FALSE(try_in_turn(second).token);
  EXPECT_EQ(server_->command({"GET", key}).str, held + ":" + first.value() + " " + second.value())
      << "the head, then the one behind it";
  const WaitTicket third;
  EXPECT_FALSE(try_in_turn(third).token);
  EXPECT_EQ(server_->command({"GET", key}).str, held + ":" + first.value() + " " + second.value())
      << "the first two only";

  EXPECT_TRUE(redis_.process(take)) << "a retry of the acquire finds its own, marked lease";
  EXPECT_TRUE(redis_.process(holder->extend())) << "the holder extends a marked key";
  EXPECT_FALSE(redis_.process(locks_.try_lock(name_))) << "a marked key is held";
  const std::string stranger = LeaseId::generate().hex();
  for (const std::string& id : {stranger, first.value()})
    EXPECT_EQ(
        server_->command({"EVAL", detail::lock_release_script().body(), "1", key, id}).integer, 0)
        << "only the holder's id releases a marked key, not " << id;

  EXPECT_TRUE(redis_.process(leave_queue(locks_, name_, first)));
  EXPECT_EQ(server_->command({"GET", key}).str, held + ":" + second.value() + " " + third.value())
      << "the head left: the key names the new first two";
  EXPECT_TRUE(redis_.process(leave_queue(locks_, name_, third)));
  EXPECT_TRUE(redis_.process(leave_queue(locks_, name_, second)));
  EXPECT_EQ(server_->command({"GET", key}).str, held) << "nobody waits: the bare id again";

  EXPECT_FALSE(try_in_turn(first).token);
  EXPECT_FALSE(try_in_turn(second).token);
  EXPECT_FALSE(try_in_turn(third).token);
  ASSERT_TRUE(redis_.process(holder->release()));
  EXPECT_FALSE(redis_.process(holder->release())) << "released once";
  const auto turn = try_in_turn(first);
  ASSERT_TRUE(turn.token);
  EXPECT_EQ(server_->command({"GET", key}).str,
            first.value() + ":" + second.value() + " " + third.value())
      << "granted to the head while others wait: marked with the next two";
  EXPECT_TRUE(redis_.process(leave_queue(locks_, name_, third)));
  EXPECT_TRUE(redis_.process(turn.token->release()));
  const auto last = try_in_turn(second);
  ASSERT_TRUE(last.token);
  EXPECT_EQ(server_->command({"GET", key}).str, second.value()) << "the last waiter: bare";
  EXPECT_TRUE(redis_.process(last.token->release()));
  EXPECT_EQ(server_->command({"EXISTS", key}).integer, 0);
}

}  // namespace
}  // namespace leasehold
