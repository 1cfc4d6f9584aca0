#include "leasehold/wait.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include "leasehold/detail/timer.hpp"
#include "leasehold/observer.hpp"
#include "transport.hpp"
#include "wait_schedule.hpp"

namespace leasehold::detail {
namespace {

struct TurnTag {};

// What one try found: the lease (granted), or where the waiter stands.
struct TurnOutcome {
  std::shared_ptr<LeaseState> state;
  TurnSeen seen;
};

// One try in turn of a wait, whatever it waits for: a Lock (try_lock_in_turn's script), or an
// RwLock's read or write side (rw_in_turn_script). Retry-safe; an unknown outcome releases the
// lease the try may have taken.
class TurnTry {
 public:
  using result_type = TurnOutcome;
  using effect = Write<TurnTag>;

  TurnTry(const TurnWait& wait, const WaitTicket& ticket)
      : wait_(wait),
        lock_try_(wait.key, wait.ttl, wait.fence_key, ticket),
        ticket_(ticket),
        value_(ticket.value()) {
    if (wait.raw)
      raw_try_.emplace(wait.key, wait.ttl, BareValue{});
  }

  Request request() const {
    if (raw_try_)
      return raw_try_->request();
    if (wait_.kind == TurnKind::lock)
      return lock_try_.request();
    if (wait_.kind == TurnKind::permit)
      return permit_request();
    const std::string queue = queue_key(wait_.key);
    const std::string tickets = tickets_key(wait_.key);
    const DecimalDigits ttl(wait_.ttl.count());
    const DecimalDigits ticket_ttl(ticket_.ttl.count());
    const std::string_view kind = wait_.kind == TurnKind::write ? "w" : "r";
    const std::string_view args[] = {kind, value_, ttl.view(), ticket_ttl.view()};
    const std::string_view keys[] = {
        wait_.key, wait_.readers_key, wait_.intent_key,
        queue,     tickets,           wait_.fence_key ? std::string_view(*wait_.fence_key) : ""};
    return Request::script(rw_in_turn_script(), std::span(keys, wait_.fence_key ? 6 : 5), args)
        .retry_safe()
        .grants_lease();
  }

  Result<TurnOutcome> parse(const Reply& reply, const Timing& timing) const {
    if (raw_try_) {
      Result<std::optional<LockToken<TurnTag>>> token = raw_try_->parse(reply, timing);
      if (!token)
        return Result<TurnOutcome>(token.error(), token.detail());
      return TurnOutcome{*token ? (*token)->state() : nullptr, {}};
    }
    if (wait_.kind == TurnKind::lock) {
      Result<Turn<TurnTag>> turn = lock_try_.parse(reply, timing);
      if (!turn)
        return Result<TurnOutcome>(turn.error(), turn.detail());
      if (turn->token)
        return TurnOutcome{turn->token->state(), {}};
      return TurnOutcome{nullptr, {turn->holder_ttl, turn->position, turn->head_ticket_ttl}};
    }
    Result<std::vector<long long>> fields = turn_fields(reply);  // RwLock and Semaphore alike
    if (!fields)
      return Result<TurnOutcome>(fields.error(), fields.detail());
    const std::vector<long long>& f = *fields;
    if (f[0] == 0) {
      // A permit's blocker is its own (the lease whose end lets it in): each permit waiter
      // tries at its blocker's end, as the head of a lock's queue does.
      const std::size_t place = wait_.kind == TurnKind::permit ? 1 : static_cast<std::size_t>(f[2]);
      return TurnOutcome{nullptr,
                         {std::chrono::milliseconds(f[1]), place, std::chrono::milliseconds(f[3])}};
    }
    const Clock::time_point deadline = lease_deadline(timing.sent, wait_.ttl);
    if (timing.received >= deadline)
      return granted_too_late<TurnOutcome>();
    auto state = std::make_shared<LeaseState>(wait_.key, ticket_.id, wait_.ttl, deadline, &kind(),
                                              second_key(), value_);
    state->fence = wait_.fence_key ? static_cast<std::uint64_t>(f[1]) : 0;
    return TurnOutcome{std::move(state), {}};
  }

  std::optional<Request> on_unknown_outcome() const {
    if (raw_try_)
      return raw_try_->on_unknown_outcome();
    if (wait_.kind == TurnKind::lock)
      return lock_try_.on_unknown_outcome();
    const LeaseState state(wait_.key, ticket_.id, wait_.ttl, Clock::time_point{}, &kind(),
                           second_key(), value_);
    return lease_request(state, false);
  }

  // The waiter as the queue and the lease store it.
  const std::string& value() const noexcept { return value_; }

  // Gives the waiter's place up (a wait that ended without the lease).
  Request leave() const {
    if (wait_.kind == TurnKind::lock)
      return LeaveQueue<TurnTag>(wait_.key, ticket_).request();
    if (wait_.kind == TurnKind::permit) {
      const WaitKeys waiting(wait_.key);
      const std::string_view keys[] = {wait_.key, waiting.queue, waiting.tickets};
      const std::string_view args[] = {value_, waiting.channel};
      return Request::script(permit_leave_queue_script(), keys, args).retry_safe();
    }
    const std::string member = std::string(wait_.kind == TurnKind::write ? "w:" : "r:") + value_;
    const WaitKeys waiting(wait_.key);
    const std::string_view keys[] = {wait_.key, wait_.readers_key, wait_.intent_key, waiting.queue,
                                     waiting.tickets};
    const std::string_view args[] = {member, waiting.channel};
    return Request::script(rw_leave_queue_script(), keys, args).retry_safe();
  }

 private:
  const LeaseKind& kind() const {
    if (wait_.kind == TurnKind::permit)
      return kPermitLease;
    return wait_.kind == TurnKind::write ? kRwWriterLease : kRwReaderLease;
  }
  // A reader's and a writer's second key is the readers' set, a permit's the count key.
  const std::string& second_key() const { return wait_.readers_key; }

  Request permit_request() const {
    const WaitKeys waiting(wait_.key);
    const DecimalDigits ttl(wait_.ttl.count());
    const DecimalDigits ticket_ttl(ticket_.ttl.count());
    const DecimalDigits permits(wait_.permits);
    const std::string_view args[] = {value_, ttl.view(), ticket_ttl.view(), permits.view(),
                                     waiting.channel};
    const std::string_view keys[] = {wait_.key, waiting.queue, waiting.tickets, wait_.readers_key,
                                     wait_.fence_key ? std::string_view(*wait_.fence_key) : ""};
    return Request::script(permit_in_turn_script(), std::span(keys, wait_.fence_key ? 5 : 4), args)
        .retry_safe()
        .grants_lease();
  }

  TurnWait wait_;
  TryLockInTurn<TurnTag> lock_try_;
  std::optional<TryLock<TurnTag>> raw_try_;  // a raw key's plain try, the same id every time
  WaitTicket ticket_;
  std::string value_;  // the waiter as the queue and the lease store it
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
        query_(wait_, ticket()),
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
  const WaitTicket& ticket() {
    ticket_.ttl = wait_.options.ticket_ttl;
    if (!wait_.holder_label.empty())
      ticket_.holder = holder_suffix(wait_.holder_label);
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
      arm(std::min(now + (wait_.raw ? wait_.options.poll : wait_.options.recheck), wait_.deadline));
      return;
    }
    if (turn->state) {
      finish({}, {}, std::move(turn->state));
      return;
    }
    if (!wait_.raw)  // a raw key's waiter has no place in a queue
      tell(observer_.get(), &Observer::on_wait, WaitEvent{wait_.key, turn->seen.position});
    if (last_try_ || now >= wait_.deadline) {
      finish({}, {}, nullptr);
      return;
    }
    if (wait_.raw) {  // nobody tells of a release: try again after the poll
      arm(std::min(now + wait_.options.poll, wait_.deadline));
      return;
    }
    if (!watch_)
      watch();
    if (again_) {
      try_now();
      return;
    }
    const Clock::time_point at =
        next_turn_try(turn->seen, now, wait_.options.recheck, wait_.deadline);
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
        (event == ChannelEvent::message && names(payload, ticket_value_))) {
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
    if (observer_) {
      using Outcome = AcquireEvent::Outcome;
      const Outcome outcome = state                                     ? Outcome::acquired
                              : error == asio::error::operation_aborted ? Outcome::cancelled
                              : error                                   ? Outcome::failed
                                                                        : Outcome::busy;
      tell(observer_.get(), &Observer::on_acquire,
           AcquireEvent{wait_.key, outcome, Clock::now() - started_});
    }
    if (wait_.raw) {  // no place to give up
      done_(error, std::move(detail), std::move(state));
      return;
    }
    if (state || (error && error != asio::error::operation_aborted)) {
      // Granted; or failed, when Redis may not answer a leave either: it is sent, not awaited.
      if (!state)
        send_without_waiting(*transport_, query_.leave());
      done_(error, std::move(detail), std::move(state));
      return;
    }
    // Given up or cancelled: the wait ends once its place is given up (a leave sent after a try
    // in flight on the same connection lands after it), whatever the leave's outcome.
    auto on_left = [self = shared_from_this(), error, detail = std::move(detail)](
                       Result<bool>) mutable { self->done_(error, std::move(detail), nullptr); };
    transport_->submit(std::make_unique<QueryOperation<LeaveTurn, decltype(on_left)>>(
        LeaveTurn{query_.leave()}, connection_now(*transport_), std::move(on_left)));
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
  if (options.poll <= std::chrono::milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument), "the poll interval must be positive");
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
