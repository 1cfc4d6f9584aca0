#include "leasehold/wait.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include "leasehold/detail/timer.hpp"
#include "transport.hpp"
#include "wait_schedule.hpp"

namespace leasehold::detail {
namespace {

struct TurnTag {};

// One wait, on its transport's strand from start() to the end: the tries in turn, the watch of
// the lock's release channel, and the timer of the next try.
class TurnWaiter final : public TurnWaitHandle, public std::enable_shared_from_this<TurnWaiter> {
 public:
  TurnWaiter(std::shared_ptr<Transport> transport, TurnWait wait, TurnWaitDone done)
      : transport_(std::move(transport)),
        wait_(std::move(wait)),
        query_(wait_.key, wait_.ttl, wait_.fence_key, ticket()),
        ticket_hex_(ticket_.id.hex()),
        timer_(transport_->strand()),
        done_(std::move(done)) {}

  void start() override {
    asio::dispatch(transport_->strand(), [self = shared_from_this()] { self->try_now(); });
  }

  void cancel() override {
    asio::post(transport_->strand(), [self = shared_from_this()] {
      self->finish(asio::error::operation_aborted, "the wait was cancelled", nullptr);
    });
  }

 private:
  const WaitTicket& ticket() {
    ticket_.ttl = wait_.options.ticket_ttl;
    return ticket_;
  }

  void try_now() {
    if (finished_)
      return;
    if (in_flight_) {
      again_ = true;  // when the try in flight is refused
      return;
    }
    in_flight_ = true;
    again_ = false;
    auto on_outcome = [self = shared_from_this()](Result<Turn<TurnTag>> turn) {
      self->on_turn(std::move(turn));
    };
    transport_->submit(
        std::make_unique<QueryOperation<TryLockInTurn<TurnTag>, decltype(on_outcome)>>(
            query_, connection_now(*transport_), std::move(on_outcome)));
  }

  void on_turn(Result<Turn<TurnTag>> turn) {
    in_flight_ = false;
    if (finished_) {  // cancelled meanwhile: a lease it got anyway is given back
      if (turn && turn->token)
        send_without_waiting(*transport_, lease_request(*turn->token->state(), false));
      return;
    }
    const Clock::time_point now = Clock::now();
    if (!turn) {
      // Redis down, restarting, slow: the wait goes on, and ends with the failure if it is
      // still there at the deadline. Any other failure ends it now.
      if (turn.error() != condition::transient || last_try_ || now >= wait_.deadline) {
        finish(turn.error(), turn.detail(), nullptr);
        return;
      }
      arm(std::min(now + wait_.options.recheck, wait_.deadline));
      return;
    }
    if (turn->token) {
      finish({}, {}, turn->token->state());
      return;
    }
    if (last_try_ || now >= wait_.deadline) {
      finish({}, {}, nullptr);
      return;
    }
    if (!watch_)
      watch();
    if (again_) {
      try_now();
      return;
    }
    const Clock::time_point at =
        next_turn_try(TurnSeen{turn->holder_ttl, turn->position, turn->head_ticket_ttl}, now,
                      wait_.options.recheck, wait_.deadline);
    arm(at);
  }

  void watch() {
    watch_ = transport_->notifications().watch(
        released_channel(wait_.key),
        [weak = weak_from_this()](ChannelEvent event, std::string_view payload) {
          if (const auto self = weak.lock())
            self->on_event(event, payload);
        });
  }

  void on_event(ChannelEvent event, std::string_view payload) {
    if (finished_)
      return;
    // Subscribed: a release may have come between the refused try and the subscription.
    if (event == ChannelEvent::subscribed ||
        (event == ChannelEvent::message && payload == ticket_hex_)) {
      ++timer_generation_;
      timer_.cancel();
      try_now();
    }
  }

  void arm(Clock::time_point at) {
    const std::uint64_t generation = ++timer_generation_;
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), generation](std::error_code) {
      if (generation != self->timer_generation_ || self->finished_)
        return;
      if (Clock::now() >= self->wait_.deadline)
        self->last_try_ = true;
      self->try_now();
    });
  }

  void finish(std::error_code error, std::string detail, std::shared_ptr<LeaseState> state) {
    if (finished_)
      return;
    finished_ = true;
    ++timer_generation_;
    timer_.cancel();
    if (watch_)
      transport_->notifications().unwatch(*watch_);
    // Given up, failed or cancelled: the place in the queue goes at once. (Sent after a try in
    // flight on the same connection, it lands after it.)
    if (!state)
      send_without_waiting(*transport_, LeaveQueue<TurnTag>(wait_.key, ticket_).request());
    done_(error, std::move(detail), std::move(state));
  }

  std::shared_ptr<Transport> transport_;
  TurnWait wait_;
  WaitTicket ticket_;
  TryLockInTurn<TurnTag> query_;
  std::string ticket_hex_;
  BasicTimer<ConnectionStrand> timer_;
  std::uint64_t timer_generation_ = 0;
  std::optional<std::uint64_t> watch_;
  bool in_flight_ = false;
  bool again_ = false;
  bool last_try_ = false;
  bool finished_ = false;
  TurnWaitDone done_;
};

}  // namespace

void validate(const WaitOptions& options) {
  if (options.ticket_ttl <= std::chrono::milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument), "the ticket TTL must be positive");
  if (options.recheck <= std::chrono::milliseconds::zero() || options.recheck >= options.ticket_ttl)
    throw Error(make_error_code(errc::invalid_argument),
                "the recheck interval must be positive and shorter than the ticket TTL (" +
                    std::to_string(options.ticket_ttl.count()) +
                    " ms): each try renews the waiter's place");
}

std::shared_ptr<TurnWaitHandle> make_turn_wait(Client& client, TurnWait wait, TurnWaitDone done) {
  return std::make_shared<TurnWaiter>(transport_of(client), std::move(wait), std::move(done));
}

}  // namespace leasehold::detail
