// The watcher behind every Watch (watch.hpp): on its client's strand, it looks at the name,
// hears of its changes (the announcements on its channel, or the key's own changes as the
// server's tracking tells them), renews its interest, and tells its sink each state.
#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include "leasehold/detail/keys.hpp"
#include "leasehold/detail/timer.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/watch.hpp"
#include "transport.hpp"

namespace leasehold::detail {
namespace {

struct WatchTag {};

// An observer's look (observe.lua).
struct ObserveLook {
  using result_type = Look;
  using effect = Write<WatchTag>;
  Request look;
  const Request& request() const { return look; }
  Result<Look> parse(const Reply& reply, const Timing&) const { return parse_look(reply); }
};

// An observer's renewal without a look (observe_keep.lua): whether to look now.
struct ObserveKeep {
  using result_type = bool;
  using effect = Write<WatchTag>;
  Request keep;
  const Request& request() const { return keep; }
  Result<bool> parse(const Reply& reply, const Timing&) const { return parse_keep(reply); }
};

class Watcher final : public WatchHandle, public std::enable_shared_from_this<Watcher> {
 public:
  Watcher(std::shared_ptr<Transport> transport, WatchTarget target, const WatchOptions& options,
          WatchSink sink)
      : transport_(std::move(transport)),
        target_(std::move(target)),
        options_(options),
        id_(LeaseId::generate().hex()),
        timer_(transport_->strand()),
        sink_(std::move(sink)) {}

  void start() override {
    asio::dispatch(transport_->strand(), [self = shared_from_this()] {
      if (self->finished_)
        return;
      auto listener = [weak = self->weak_from_this()](ChannelEvent event,
                                                      std::string_view payload) {
        if (const auto alive = weak.lock())
          alive->on_event(event, payload);
      };
      Notifications& notifications = self->transport_->notifications();
      self->watch_ = self->target_.announced
                         ? notifications.watch(changed_channel(self->target_.key), listener)
                         : notifications.watch_key(self->target_.key, listener);
      self->look();
    });
  }

  void cancel() override {
    asio::post(transport_->strand(), [self = shared_from_this()] { self->finish(); });
  }

 private:
  // A full look: the state, announced to every observer if it changed unannounced.
  void look() {
    if (finished_)
      return;
    if (in_flight_) {
      again_ = true;
      return;
    }
    in_flight_ = true;
    again_ = false;
    newest_heard_ = 0;
    auto on_look = [self = shared_from_this()](Result<Look> look) {
      self->on_look(std::move(look));
    };
    transport_->submit(std::make_unique<QueryOperation<ObserveLook, decltype(on_look)>>(
        ObserveLook{observe_request(target_, id_, options_.ticket_ttl)},
        connection_now(*transport_), std::move(on_look)));
  }

  // A renewal alone, for an observer told of changes that is not a looker.
  void keep() {
    if (finished_ || in_flight_)
      return;
    in_flight_ = true;
    auto on_kept = [self = shared_from_this()](Result<bool> look_now) {
      self->in_flight_ = false;
      if (self->finished_)
        return;
      if (self->again_ || !look_now || *look_now)
        return self->look();  // a failed renewal is made again as a look
      self->schedule();
    };
    transport_->submit(std::make_unique<QueryOperation<ObserveKeep, decltype(on_kept)>>(
        ObserveKeep{observe_keep_request(target_, id_, options_.ticket_ttl)},
        connection_now(*transport_), std::move(on_kept)));
  }

  void on_look(Result<Look> look) {
    in_flight_ = false;
    if (finished_)
      return;
    if (!look) {
      // Redis down, restarting, slow: the watch goes on, with the state it last had. Any other
      // failure ends it.
      if (look.error() != condition::transient) {
        sink_(look.error(), look.detail(), nullptr);
        finish();
        return;
      }
      arm(Clock::now() + options_.recheck_unwatched, true);
      return;
    }
    looker_ = look->looker;
    // An announcement heard since the look was sent may be newer than what it found; otherwise
    // the look is the latest word, even with a smaller version (a failover may have lost some).
    if (newest_heard_ < look->seen.version || !seen_)
      apply(look->seen);
    if (again_)
      return this->look();
    schedule();
  }

  void on_event(ChannelEvent event, std::string_view payload) {
    if (finished_)
      return;
    if (event == ChannelEvent::subscribed) {  // (again): what was announced meanwhile is missed
      watched_ = true;
      look();
      return;
    }
    if (event == ChannelEvent::unavailable) {
      watched_ = false;
      if (!in_flight_ && armed_for_ > Clock::now() + options_.recheck_unwatched)
        arm(Clock::now() + options_.recheck_unwatched, true);
      return;
    }
    if (!target_.announced) {  // the key changed (an extension, too): look what it holds now
      watched_ = true;
      look();
      return;
    }
    const std::optional<Announced> heard = parse_announcement(payload);
    if (!heard)  // not one of leasehold's (another publisher): no observer looks because of it
      return;
    newest_heard_ = std::max(newest_heard_, heard->version);
    if (seen_ && heard->version <= version_)
      return;
    apply(*heard);
    if (!in_flight_)
      schedule(true);  // a looker looks when this holder's lease would run out
  }

  void apply(const Announced& seen) {
    version_ = seen.version;
    seen_at_ = Clock::now();
    const bool changed = !seen_ || !seen_->same_as(seen.state);
    seen_ = seen.state;
    if (changed)
      sink_({}, {}, &*seen_);
  }

  // The next look or renewal: a looker looks when the holder's lease would run out, or every
  // recheck; an observer not told of changes looks every recheck_unwatched; the others renew
  // every recheck. `sooner_only`: an announcement moves an armed timer earlier, never later (a
  // name that changes often must not keep its observers from renewing).
  void schedule(bool sooner_only = false) {
    const Clock::time_point now = Clock::now();
    if (!watched_)
      return arm(now + options_.recheck_unwatched, true);
    Clock::time_point at = now + options_.recheck;
    const std::chrono::milliseconds left = seen_ ? seen_->time_left : std::chrono::milliseconds(0);
    constexpr std::chrono::milliseconds kMargin{1};  // after the expiry at Redis
    if (looker_ && seen_ && !seen_->lease.empty() && left > std::chrono::milliseconds::zero() &&
        left < options_.recheck)
      at = std::min(at, seen_at_ + left + kMargin);
    if (sooner_only && at >= armed_for_)
      return;
    arm(at, looker_);
  }

  void arm(Clock::time_point at, bool full_look) {
    const std::uint64_t generation = ++timer_generation_;
    armed_for_ = at;
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), generation, full_look](std::error_code) {
      if (generation != self->timer_generation_ || self->finished_)
        return;
      self->armed_for_ = Clock::time_point::max();
      if (full_look || !self->watched_)
        self->look();
      else
        self->keep();
    });
  }

  void finish() {
    if (finished_)
      return;
    finished_ = true;
    ++timer_generation_;
    timer_.cancel();
    if (watch_ && target_.announced)
      transport_->notifications().unwatch(*watch_);
    else if (watch_)
      transport_->notifications().unwatch_key(*watch_);
    if (looker_)  // the next observer that renews takes its duty
      send_without_waiting(*transport_, observe_leave_request(target_, id_));
  }

  std::shared_ptr<Transport> transport_;
  WatchTarget target_;
  WatchOptions options_;
  std::string id_;
  BasicTimer<ConnectionStrand> timer_;
  std::uint64_t timer_generation_ = 0;
  Clock::time_point armed_for_ = Clock::time_point::max();  // max(): not armed
  std::optional<std::uint64_t> watch_;
  bool watched_ = false;  // subscribed: announcements reach it
  bool looker_ = false;
  std::optional<SeenLease> seen_;  // the state last applied
  std::uint64_t version_ = 0;      // its version
  Clock::time_point seen_at_;
  std::uint64_t newest_heard_ = 0;  // the newest version announced since the look in flight
  bool in_flight_ = false;
  bool again_ = false;
  bool finished_ = false;
  WatchSink sink_;
};

}  // namespace

std::shared_ptr<WatchHandle> make_watch(Client& client, WatchTarget target,
                                        const WatchOptions& options, WatchSink sink) {
  validate(options);
  return std::make_shared<Watcher>(transport_of(client), std::move(target), options,
                                   std::move(sink));
}

}  // namespace leasehold::detail
