// The watcher of every lease of a name (an RwLock's, a Semaphore's; watch.hpp), on its client's
// strand. The server's tracking of the name's keys tells it of each write, expiry or delete of
// them; a status read (lease_status.lua) looks. A member of a set runs out without a write, so
// a look is also due when the soonest lease, as last seen, would run out.
#include <algorithm>
#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <tuple>

#include "leasehold/detail/timer.hpp"
#include "leasehold/watch.hpp"
#include "transport.hpp"

namespace leasehold::detail {
namespace {

struct DescribedTag {};

// A look: the status read of the name's leases alone.
struct StatusLook {
  using result_type = LeaseStatus;
  using effect = Read<DescribedTag>;
  const StatusKeys* keys;
  Request look;
  const Request& request() const { return look; }
  Result<LeaseStatus> parse(const Reply& reply, const Timing&) const { return keys->parse(reply); }
};

// The leases in an order of their own (a look lists a set's members by their end, which an
// extension moves), the time they have left aside.
auto identities(const std::vector<LeaseInfo>& leases) {
  using Identity = std::tuple<LeaseInfo::Kind, std::string, bool, std::string, std::int64_t,
                              std::string, std::chrono::system_clock::time_point>;
  std::vector<Identity> found;
  found.reserve(leases.size());
  for (const LeaseInfo& lease : leases) {
    const Holder none;
    const Holder& holder = lease.holder ? *lease.holder : none;
    found.emplace_back(lease.kind, lease.id_prefix, lease.holder.has_value(), holder.host,
                       holder.pid, holder.label, holder.taken_at);
  }
  std::sort(found.begin(), found.end());
  return found;
}

class DescribedWatcher final : public WatchHandle,
                               public std::enable_shared_from_this<DescribedWatcher> {
 public:
  DescribedWatcher(std::shared_ptr<Transport> transport, StatusKeys keys,
                   const WatchOptions& options, StateSink<std::vector<LeaseInfo>> sink)
      : transport_(std::move(transport)),
        keys_(std::move(keys)),
        look_(keys_.request()),
        options_(options),
        timer_(transport_->strand()),
        sink_(std::move(sink)) {}

  void start() override {
    asio::dispatch(transport_->strand(), [self = shared_from_this()] {
      if (self->finished_)
        return;
      for (const std::string* key : {&self->keys_.lease, &self->keys_.leases}) {
        if (key->empty())
          continue;
        const std::size_t index = self->tracked_.size();
        self->tracked_.push_back({0, false});
        self->tracked_.back().id = self->transport_->notifications().watch_key(
            *key, [weak = self->weak_from_this(), index](ChannelEvent event, std::string_view) {
              if (const auto alive = weak.lock())
                alive->on_event(index, event);
            });
      }
      self->look();
    });
  }

  void cancel() override {
    asio::post(transport_->strand(), [self = shared_from_this()] { self->finish(); });
  }

 private:
  struct Tracked {
    std::uint64_t id;
    bool told;  // its changes reach this watcher now
  };

  void look() {
    if (finished_)
      return;
    if (in_flight_) {
      again_ = true;
      return;
    }
    in_flight_ = true;
    again_ = false;
    auto on_look = [self = shared_from_this()](Result<LeaseStatus> status) {
      self->on_look(std::move(status));
    };
    transport_->submit(std::make_unique<QueryOperation<StatusLook, decltype(on_look)>>(
        StatusLook{&keys_, look_}, connection_now(*transport_), std::move(on_look)));
  }

  void on_look(Result<LeaseStatus> status) {
    in_flight_ = false;
    if (finished_)
      return;
    if (!status) {
      // Redis down, restarting, slow: the watch goes on, with the state it last had. Any other
      // failure ends it.
      if (status.error() != condition::transient) {
        sink_(status.error(), status.detail(), nullptr);
        finish();
        return;
      }
      arm(Clock::now() + options_.recheck_unwatched);
      return;
    }
    std::vector<LeaseInfo>& leases = status->leases;
    if (!seen_ || identities(*seen_) != identities(leases)) {
      seen_ = leases;
      sink_({}, {}, &*seen_);
    }
    if (again_)
      return look();
    schedule(leases);
  }

  void on_event(std::size_t index, ChannelEvent event) {
    if (finished_)
      return;
    tracked_[index].told = event != ChannelEvent::unavailable;
    if (event == ChannelEvent::unavailable) {
      if (!in_flight_ && armed_for_ > Clock::now() + options_.recheck_unwatched)
        arm(Clock::now() + options_.recheck_unwatched);
      return;
    }
    look();  // tracked (again), or a key changed: an extension too
  }

  // The next look: when the soonest lease would run out, or every recheck; every
  // recheck_unwatched while a key's changes cannot reach the watcher.
  void schedule(const std::vector<LeaseInfo>& leases) {
    const Clock::time_point now = Clock::now();
    const bool told = std::all_of(tracked_.begin(), tracked_.end(),
                                  [](const Tracked& tracked) { return tracked.told; });
    Clock::time_point at = now + (told ? options_.recheck : options_.recheck_unwatched);
    constexpr std::chrono::milliseconds kMargin{1};  // after the expiry at Redis
    for (const LeaseInfo& lease : leases)
      if (lease.time_left > std::chrono::milliseconds::zero())
        at = std::min(at, now + lease.time_left + kMargin);
    arm(at);
  }

  void arm(Clock::time_point at) {
    const std::uint64_t generation = ++timer_generation_;
    armed_for_ = at;
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), generation](std::error_code) {
      if (generation != self->timer_generation_ || self->finished_)
        return;
      self->armed_for_ = Clock::time_point::max();
      self->look();
    });
  }

  void finish() {
    if (finished_)
      return;
    finished_ = true;
    ++timer_generation_;
    timer_.cancel();
    for (const Tracked& tracked : tracked_)
      transport_->notifications().unwatch_key(tracked.id);
  }

  std::shared_ptr<Transport> transport_;
  StatusKeys keys_;
  Request look_;
  WatchOptions options_;
  BasicTimer<ConnectionStrand> timer_;
  std::uint64_t timer_generation_ = 0;
  Clock::time_point armed_for_ = Clock::time_point::max();  // max(): not armed
  std::vector<Tracked> tracked_;
  std::optional<std::vector<LeaseInfo>> seen_;  // the leases last told
  bool in_flight_ = false;
  bool again_ = false;
  bool finished_ = false;
  StateSink<std::vector<LeaseInfo>> sink_;
};

}  // namespace

std::shared_ptr<WatchHandle> make_described_watch(Client& client, WatchTarget target,
                                                  const WatchOptions& options,
                                                  StateSink<std::vector<LeaseInfo>> sink) {
  validate(options);
  return std::make_shared<DescribedWatcher>(transport_of(client), std::move(target.described),
                                            options, std::move(sink));
}

}  // namespace leasehold::detail
