#include "leasehold/wait.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include "leasehold/detail/timer.hpp"
#include "leasehold/observer.hpp"
#include "tell_observer.hpp"
#include "transport.hpp"
#include "wait_schedule.hpp"

namespace leasehold::detail {
namespace {

struct TurnTag {};

// One try in turn of a wait, by its kind's contract. Retry-safe; an unknown outcome releases the
// lease the try may have taken.
class TurnTry {
 public:
  using result_type = TurnOutcome;
  using effect = Write<TurnTag>;

  TurnTry(std::shared_ptr<const TurnContract> turn, const WaitTicket& ticket)
      : turn_(std::move(turn)), waiter_(waiter_of(ticket)) {}

  Request request() const { return turn_->try_request(waiter_); }
  Result<TurnOutcome> parse(const Reply& reply, const Timing& timing) const {
    return turn_->parse_try(reply, timing, waiter_);
  }
  std::optional<Request> on_unknown_outcome() const { return turn_->release_request(waiter_); }

  // The waiter as the queue and the lease store it.
  const std::string& value() const noexcept { return waiter_.value; }
  // Renews the waiter's place without a try; nothing without a queue.
  std::optional<Request> keep_place() const {
    return turn_->keep_place_request(waiter_, server_clock_now() + waiter_.ticket_ttl);
  }
  // Gives the waiter's place up (a wait that ended without the lease); nothing without a queue.
  std::optional<Request> leave() const { return turn_->leave_request(waiter_); }

 private:
  std::shared_ptr<const TurnContract> turn_;
  Waiter waiter_;
};

// The leave of a wait that ended without the lease, as a query whose reply is awaited: the wait
// ends once its place is given up, so a process that exits right after it leaves no place behind.
struct LeaveTurn {
  using result_type = bool;
  using effect = Write<TurnTag>;
  Request leave;
  const Request& request() const { return leave; }
  Result<bool> parse(const Reply& reply, const Timing&) const { return one_or_zero(reply); }
};

// A waiter's place renewed without a try (TurnContract::keep_place_request()): whether the
// waiter should try now (it is no longer queued, or the lease is free for the waiters ahead).
struct KeepPlace {
  using result_type = bool;
  using effect = Write<TurnTag>;
  Request keep;
  const Request& request() const { return keep; }
  Result<bool> parse(const Reply& reply, const Timing&) const {
    if (reply.is_error())
      return error_result<bool>(reply);
    if (reply.type != Reply::Type::integer || reply.integer < 0 || reply.integer > 2)
      return Result<bool>(make_error_code(errc::unexpected_reply),
                          "an unexpected reply to a renewal of a place: " + to_string(reply));
    return reply.integer != 2;
  }
};

// Whether a release's message (the ids whose turn it is, space-separated) names `id`.
bool names(std::string_view payload, std::string_view id) {
  for (std::size_t at = payload.find(id); at != std::string_view::npos;
       at = payload.find(id, at + 1)) {
    const bool starts = at == 0 || payload[at - 1] == ' ';
    const bool ends = at + id.size() == payload.size() || payload[at + id.size()] == ' ';
    if (starts && ends)
      return true;
  }
  return false;
}

// One wait, on its transport's strand from start() to the end: the tries in turn, the watch of
// the lock's release channel, and the timer of the next try.
class TurnWaiter final : public TurnWaitHandle, public std::enable_shared_from_this<TurnWaiter> {
 public:
  TurnWaiter(std::shared_ptr<Transport> transport, std::shared_ptr<Observer> observer,
             TurnWait wait, TurnWaitDone done)
      : transport_(std::move(transport)),
        observer_(std::move(observer)),
        wait_(std::move(wait)),
        query_(wait_.turn, ticket()),
        ticket_value_(query_.value()),
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
  const std::string& key() const noexcept { return wait_.turn->key(); }
  bool queued() const noexcept { return wait_.turn->queued(); }

  const WaitTicket& ticket() {
    ticket_.ttl = wait_.options.ticket_ttl;
    ticket_.grace = wait_.options.grace;
    if (!wait_.holder_label.empty())
      ticket_.holder = holder_suffix(wait_.holder_label);
    if (wait_.id)
      ticket_.id = *wait_.id;
    if (wait_.holder)
      ticket_.holder = *wait_.holder;
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
    auto on_outcome = [self = shared_from_this()](Result<TurnOutcome> turn) {
      self->on_turn(std::move(turn));
    };
    transport_->submit(std::make_unique<QueryOperation<TurnTry, decltype(on_outcome)>>(
        query_, connection_now(*transport_), std::move(on_outcome)));
  }

  // The look the timer asks for: a try, or, for a waiter told of releases that is neither the
  // head nor the one behind it (whose turn comes only with a release that names it), the
  // renewal of its place alone.
  void look() {
    if (finished_)
      return;
    std::optional<Request> keep;
    if (watched_ && position_ > 2 && !last_try_)
      keep = query_.keep_place();
    if (!keep || in_flight_) {
      try_now();
      return;
    }
    in_flight_ = true;
    auto on_kept = [self = shared_from_this()](Result<bool> should_try) {
      self->on_kept(std::move(should_try));
    };
    transport_->submit(std::make_unique<QueryOperation<KeepPlace, decltype(on_kept)>>(
        KeepPlace{std::move(*keep)}, connection_now(*transport_), std::move(on_kept)));
  }

  void on_kept(Result<bool> should_try) {
    in_flight_ = false;
    if (finished_)
      return;
    if (again_ || (should_try && *should_try)) {  // told meanwhile, out of the queue, or free
      try_now();
      return;
    }
    const Clock::time_point now = Clock::now();
    if (!should_try && (should_try.error() != condition::transient || now >= wait_.deadline)) {
      finish(should_try.error(), should_try.detail(), nullptr);
      return;
    }
    arm(std::min(now + (should_try ? recheck(now) : wait_.options.recheck_unwatched),
                 wait_.deadline));
  }

  // How long a waiter behind the first two trusts the queue ahead of it to move without it:
  // `recheck` while it is told of releases, `recheck_unwatched` while it is not, and for a
  // ticket's life after the client's subscriptions came back. Messages may have been lost
  // meanwhile, and a failover may have brought back the places of waiters that had already left
  // (their leave, unacknowledged, died with the old master): a release that names two of them
  // tells no one alive, and only a waiter that looks finds the lease free and gives them their
  // grace.
  std::chrono::milliseconds recheck(Clock::time_point now) const {
    const Clock::time_point restored = transport_->notifications().restored_at();
    const bool doubting = position_ > 2 && restored != Clock::time_point::min() &&
                          now - restored < wait_.options.ticket_ttl;
    return watched_ && !doubting ? wait_.options.recheck : wait_.options.recheck_unwatched;
  }

  void on_turn(Result<TurnOutcome> turn) {
    in_flight_ = false;
    if (finished_) {  // cancelled meanwhile: a lease it got anyway is given back
      if (turn && turn->state)
        send_without_waiting(*transport_, lease_request(*turn->state, false));
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
      arm(std::min(now + (queued() ? wait_.options.recheck_unwatched : wait_.options.poll),
                   wait_.deadline));
      return;
    }
    if (turn->state) {
      finish({}, {}, std::move(turn->state));
      return;
    }
    position_ = turn->seen.position;
    if (queued())  // a waiter without a queue has no place in one
      tell(observer_.get(), &Observer::on_wait, WaitEvent{key(), turn->seen.position});
    if (last_try_ || now >= wait_.deadline) {
      finish({}, {}, nullptr);
      return;
    }
    if (!queued()) {  // nobody tells of a release: try again after the poll
      arm(std::min(now + wait_.options.poll, wait_.deadline));
      return;
    }
    if (!watch_)
      watch();
    if (again_) {
      try_now();
      return;
    }
    arm(next_turn_try(turn->seen, now, recheck(now), wait_.deadline));
  }

  void watch() {
    watch_ = transport_->notifications().watch(
        released_channel(key()),
        [weak = weak_from_this()](ChannelEvent event, std::string_view payload) {
          if (const auto self = weak.lock())
            self->on_event(event, payload);
        });
  }

  void on_event(ChannelEvent event, std::string_view payload) {
    if (finished_)
      return;
    if (event != ChannelEvent::message)
      watched_ = event == ChannelEvent::subscribed;
    if (event == ChannelEvent::unavailable &&
        timer_armed_for_ > Clock::now() + wait_.options.recheck_unwatched) {
      // Nobody tells this waiter of a release any more: it looks again as an unwatched one does.
      arm(std::min(Clock::now() + wait_.options.recheck_unwatched, wait_.deadline));
      return;
    }
    // Subscribed: a release may have come between the refused try and the subscription.
    if (event == ChannelEvent::subscribed ||
        (event == ChannelEvent::message && names(payload, ticket_value_))) {
      ++timer_generation_;
      timer_.cancel();
      try_now();
    }
  }

  void arm(Clock::time_point at) {
    const std::uint64_t generation = ++timer_generation_;
    timer_armed_for_ = at;
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), generation](std::error_code) {
      if (generation != self->timer_generation_ || self->finished_)
        return;
      self->timer_armed_for_ = Clock::time_point::max();
      if (Clock::now() >= self->wait_.deadline)
        self->last_try_ = true;
      self->look();
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
    if (observer_) {
      using Outcome = AcquireEvent::Outcome;
      const Outcome outcome = state                                     ? Outcome::acquired
                              : error == asio::error::operation_aborted ? Outcome::cancelled
                              : error                                   ? Outcome::failed
                                                                        : Outcome::busy;
      tell(observer_.get(), &Observer::on_acquire,
           AcquireEvent{key(), outcome, Clock::now() - started_});
    }
    std::optional<Request> leave = query_.leave();
    if (!leave) {  // no place to give up
      done_(error, std::move(detail), std::move(state));
      return;
    }
    if (state || (error && error != asio::error::operation_aborted)) {
      // Granted; or failed, when Redis may not answer a leave either: it is sent, not awaited.
      if (!state)
        send_without_waiting(*transport_, std::move(*leave));
      done_(error, std::move(detail), std::move(state));
      return;
    }
    // Given up or cancelled: the wait ends once its place is given up (a leave sent after a try
    // in flight on the same connection lands after it), whatever the leave's outcome.
    auto on_left = [self = shared_from_this(), error, detail = std::move(detail)](
                       Result<bool>) mutable { self->done_(error, std::move(detail), nullptr); };
    transport_->submit(std::make_unique<QueryOperation<LeaveTurn, decltype(on_left)>>(
        LeaveTurn{std::move(*leave)}, connection_now(*transport_), std::move(on_left)));
  }

  std::shared_ptr<Transport> transport_;
  std::shared_ptr<Observer> observer_;  // the client's, if it has one
  Clock::time_point started_ = Clock::now();
  TurnWait wait_;
  WaitTicket ticket_;
  TurnTry query_;
  std::string ticket_value_;
  BasicTimer<ConnectionStrand> timer_;
  std::uint64_t timer_generation_ = 0;
  Clock::time_point timer_armed_for_ = Clock::time_point::max();  // max(): not armed
  std::optional<std::uint64_t> watch_;
  bool watched_ = false;      // subscribed: a release that names this waiter reaches it
  std::size_t position_ = 0;  // its place at its last try
  bool in_flight_ = false;
  bool again_ = false;
  bool last_try_ = false;
  bool finished_ = false;
  TurnWaitDone done_;
};

}  // namespace

void validate(const WaitOptions& options) {
  const auto invalid = [](const std::string& what) {
    return Error(make_error_code(errc::invalid_argument), what);
  };
  constexpr auto zero = std::chrono::milliseconds::zero();
  if (options.ticket_ttl <= zero)
    throw invalid("the ticket TTL must be positive");
  for (const auto& [interval, name] : {std::pair{options.recheck, "recheck"},
                                       std::pair{options.recheck_unwatched, "recheck_unwatched"}})
    if (interval <= zero || interval >= options.ticket_ttl)
      throw invalid(std::string("the ") + name +
                    " interval must be positive and shorter than the ticket TTL (" +
                    std::to_string(options.ticket_ttl.count()) +
                    " ms): each look renews the waiter's place");
  if (options.grace <= zero)
    throw invalid("the grace must be positive");
  if (options.poll <= zero)
    throw invalid("the poll interval must be positive");
}

void check_not_io_thread(const Client& client, const char* what) {
  if (client.running_in_io_thread())
    throw Error(make_error_code(errc::called_from_io_thread),
                std::string(what) + "() was called on the client's I/O thread; use its async form");
}

std::shared_ptr<TurnWaitHandle> make_turn_wait(Client& client, TurnWait wait, TurnWaitDone done) {
  return std::make_shared<TurnWaiter>(transport_of(client), client.options().observer,
                                      std::move(wait), std::move(done));
}

}  // namespace leasehold::detail
