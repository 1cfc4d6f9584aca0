#include "leasehold/lock_set.hpp"

#include <algorithm>
#include <asio/post.hpp>
#include <cstdint>

#include "lease_scripts.hpp"
#include "leasehold/detail/holder.hpp"
#include "leasehold/detail/keys.hpp"

namespace leasehold::detail {
namespace {

// The scripts' contracts are in src/lease/scripts/.
const Script& lock_set_try_script() {
  static const Script script{std::string(lua::lock_set_try)};
  return script;
}
const Script& lock_set_lease_script() {
  static const Script script{std::string(lua::lock_set_lease)};
  return script;
}
const Script& rw_set_try_script() {
  static const Script script{std::string(lua::rw_set_try)};
  return script;
}
const Script& rw_set_lease_script() {
  static const Script script{std::string(lua::rw_set_lease)};
  return script;
}

constexpr std::size_t kMaxNames = 1000;

// The ends of the runs of `names` lease keys that share a slot (they are ordered by slot).
std::vector<std::size_t> slot_runs(std::span<const std::string_view> leases) {
  std::vector<std::size_t> ends;
  std::uint16_t previous = 0;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    const std::uint16_t slot = key_slot(leases[i]);  // once per key
    if (i > 0 && slot != previous)
      ends.push_back(i);
    previous = slot;
  }
  if (!leases.empty())
    ends.push_back(leases.size());
  return ends;
}

// The keys of names [begin, end) from `keys`: blocks of `names` keys each (the lease keys, then
// their readers' sets, ...), every block in the names' order.
std::vector<std::string_view> keys_of_names(std::span<const std::string_view> keys,
                                            std::size_t names, std::size_t begin, std::size_t end) {
  std::vector<std::string_view> out;
  for (std::size_t block = 0; block + names <= keys.size(); block += names)
    out.insert(out.end(), keys.begin() + block + begin, keys.begin() + block + end);
  return out;
}

// `make(keys, names)` over every name, which a cluster sends as one call per slot's names
// (Request::split_by_slot) when they span slots.
template <class Make>
Request per_slot(std::span<const std::string_view> keys, std::size_t names, Make make) {
  Request whole = make(keys, names);
  const std::vector<std::size_t> runs = slot_runs(keys.first(names));
  if (runs.size() < 2)
    return whole;
  std::vector<Request> parts;
  std::size_t begin = 0;
  for (const std::size_t end : runs) {
    parts.push_back(make(keys_of_names(keys, names, begin, end), end - begin));
    begin = end;
  }
  return std::move(whole).split_by_slot(std::move(parts));
}

// The release (no TTL) or the extend of the lease `value` held on `keys` (for writers: the
// writer keys, then the readers', queues and tickets): the value, the TTL or '', then each
// name's release channel.
Request set_lease_request(const Script& script, std::span<const std::string_view> keys,
                          std::size_t names, std::string_view value,
                          std::optional<std::chrono::milliseconds> ttl) {
  return per_slot(keys, names, [&](std::span<const std::string_view> some, std::size_t count) {
    std::vector<std::string> channels;
    channels.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
      channels.push_back(released_channel(some[i]));
    const DecimalDigits ttl_ms(ttl ? ttl->count() : 0);
    std::vector<std::string_view> args{value, ttl ? ttl_ms.view() : std::string_view()};
    args.insert(args.end(), channels.begin(), channels.end());
    Request request = Request::script(script, some, args);
    if (ttl)
      return std::move(request).grants_lease();
    return request;
  });
}

// Every key of a lease on several names: `key`, then the others.
std::vector<std::string_view> keys_of(const LeaseState& lease) {
  std::vector<std::string_view> keys{lease.key};
  keys.insert(keys.end(), lease.more_keys.begin(), lease.more_keys.end());
  return keys;
}

Request lock_set_release_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(lock_set_lease_script(), keys, keys.size(), lease.value, std::nullopt);
}
Request lock_set_extend_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(lock_set_lease_script(), keys, keys.size(), lease.value, lease.ttl);
}
Request rw_set_release_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(rw_set_lease_script(), keys, keys.size() / 4, lease.value, std::nullopt);
}
Request rw_set_extend_request(const LeaseState& lease) {
  const std::vector<std::string_view> keys = keys_of(lease);
  return set_lease_request(rw_set_lease_script(), keys, keys.size() / 4, lease.value, lease.ttl);
}

// Leases on several names: a Lock's keys (key, more_keys), or an RwLock's writer keys followed
// by the names' readers' sets, queues and tickets. Their release and extend answer 1 only when
// every name was held.
const LeaseKind kLockSetLease{lock_set_lease_script, lock_set_lease_script,
                              lock_set_release_request, LeaseKind::HeldAt::key_value,
                              lock_set_extend_request};
const LeaseKind kRwWriterSetLease{rw_set_lease_script, rw_set_lease_script, rw_set_release_request,
                                  LeaseKind::HeldAt::key_value, rw_set_extend_request};

}  // namespace

void validate_lock_set_size(std::size_t names) {
  if (names == 0)
    throw Error(make_error_code(errc::invalid_argument), "a lock set needs at least one name");
  if (names > kMaxNames)
    throw Error(make_error_code(errc::invalid_argument),
                "a lock set takes at most " + std::to_string(kMaxNames) + " names, got " +
                    std::to_string(names));
}

LockSetTry::LockSetTry(LockSetKeys keys, std::optional<std::vector<FenceCounters>> fences,
                       std::chrono::milliseconds ttl, std::string_view holder_label)
    : keys_(std::move(keys)),
      fences_(std::move(fences)),
      ttl_(ttl),
      id_(LeaseId::generate()),
      holder_(holder_suffix(holder_label)),
      value_(id_.hex() + holder_) {}

Request LockSetTry::request() const {
  std::vector<std::string_view> keys(keys_.leases.begin(), keys_.leases.end());
  keys.insert(keys.end(), keys_.readers.begin(), keys_.readers.end());
  if (fences_) {
    for (const FenceCounters& counters : *fences_)
      keys.push_back(counters.slot);
    for (const FenceCounters& counters : *fences_)
      keys.push_back(counters.own);
  }
  const DecimalDigits ttl(ttl_.count());
  const Script& script = writers() ? rw_set_try_script() : lock_set_try_script();
  const auto call = [&](std::span<const std::string_view> some, std::size_t names) {
    const DecimalDigits count(static_cast<long long>(names));
    const std::string_view args[] = {value_, ttl.view(), count.view()};
    return Request::script(script, some, args).retry_safe().grants_lease();
  };
  Request on_cluster = per_slot(keys, keys_.leases.size(), call);
  if (!fences_)
    return on_cluster;
  // A single server counts every name's fence on its one counter, in one call.
  const DecimalDigits count(static_cast<long long>(keys_.leases.size()));
  const std::string_view args[] = {value_, ttl.view(), count.view()};
  return counted_per_topology(std::move(on_cluster), script, keys, args, *fences_)
      .retry_safe()
      .grants_lease();
}

namespace {

// One script's reply for `names` names: {1, a fence per name} or {0, the busy name's place}.
struct GroupReply {
  bool taken = false;
  std::size_t busy = 0;  // its place in the group, from 0
  std::span<const Reply> fences;
};

std::optional<GroupReply> group_reply(const Reply& reply, std::size_t names) {
  if (reply.type != Reply::Type::array || reply.elements.size() < 2)
    return std::nullopt;
  for (const Reply& element : reply.elements)
    if (element.type != Reply::Type::integer || element.integer < 0)
      return std::nullopt;
  if (reply.elements[0].integer == 0) {
    const long long busy = reply.elements[1].integer;
    if (busy < 1 || static_cast<std::size_t>(busy) > names)
      return std::nullopt;
    return GroupReply{false, static_cast<std::size_t>(busy - 1), {}};
  }
  if (reply.elements.size() != names + 1)
    return std::nullopt;
  return GroupReply{true, 0, std::span<const Reply>(reply.elements).subspan(1)};
}

// A reply of the try's parts (one per slot's names, on a cluster), not of the whole script: an
// array of their replies (arrays, or error replies), where the whole's starts with an integer.
bool is_parts_reply(const Reply& reply) {
  return reply.type == Reply::Type::array && !reply.elements.empty() &&
         reply.elements[0].type != Reply::Type::integer;
}

}  // namespace

Result<LockSetTried> LockSetTry::parse(const Reply& reply, const Timing& timing) const {
  if (reply.is_error())
    return error_result<LockSetTried>(reply);
  const auto unexpected = [&] {
    return Result<LockSetTried>(make_error_code(errc::unexpected_reply), to_string(reply));
  };
  // The whole script's reply, or (names of several slots) its parts' in the order of the names.
  const std::vector<std::size_t> runs = runs_of_slot();
  std::vector<GroupReply> groups;
  if (!is_parts_reply(reply)) {
    const std::optional<GroupReply> whole = group_reply(reply, keys_.leases.size());
    if (!whole)
      return unexpected();
    groups.push_back(*whole);
  } else {
    if (runs.size() < 2 || reply.elements.size() != runs.size())
      return unexpected();
    std::size_t begin = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const Reply& part = reply.elements[i];
      if (part.is_error())
        return error_result<LockSetTried>(part);  // leftover() gives back the others
      const std::optional<GroupReply> group = group_reply(part, runs[i] - begin);
      if (!group)
        return unexpected();
      if (!group->taken)
        return LockSetTried{nullptr, begin + group->busy};  // leftover() gives back the others
      groups.push_back(*group);
      begin = runs[i];
    }
  }
  if (!groups.front().taken)
    return LockSetTried{nullptr, groups.front().busy};
  const Clock::time_point deadline = lease_deadline(timing.sent, ttl_);
  if (timing.received >= deadline)
    return granted_too_late<LockSetTried>();
  auto lease = std::make_shared<LeaseState>(keys_.leases.front(), id_, ttl_, deadline,
                                            writers() ? &kRwWriterSetLease : &kLockSetLease,
                                            std::string(), value_);
  lease->more_keys.assign(keys_.leases.begin() + 1, keys_.leases.end());
  lease->slot_parts = runs.size() > 1 ? runs.size() : 0;
  for (const auto* more : {&keys_.readers, &keys_.queues, &keys_.tickets})
    lease->more_keys.insert(lease->more_keys.end(), more->begin(), more->end());
  if (fences_) {
    for (const GroupReply& group : groups)
      for (const Reply& fence : group.fences)
        lease->fences.push_back(static_cast<std::uint64_t>(fence.integer));
    lease->fence = lease->fences.front();
  }
  return LockSetTried{std::move(lease), 0};
}

std::optional<Request> LockSetTry::leftover(const Reply& reply) const {
  if (!is_parts_reply(reply))
    return std::nullopt;  // one script: all or none
  const auto taken = [](const Reply& part) {
    return !part.is_error() && !part.elements.empty() &&
           part.elements[0].type == Reply::Type::integer && part.elements[0].integer == 1;
  };
  // Some part took its names and another did not (busy, or an error reply): the lease is not
  // this call's, and what it took is given back.
  if (std::all_of(reply.elements.begin(), reply.elements.end(), taken) ||
      std::none_of(reply.elements.begin(), reply.elements.end(), taken))
    return std::nullopt;
  return on_unknown_outcome();
}

std::vector<std::size_t> LockSetTry::runs_of_slot() const {
  const std::vector<std::string_view> leases(keys_.leases.begin(), keys_.leases.end());
  return slot_runs(leases);
}

std::optional<Request> LockSetTry::on_unknown_outcome() const {
  std::vector<std::string_view> keys(keys_.leases.begin(), keys_.leases.end());
  if (!writers())
    return set_lease_request(lock_set_lease_script(), keys, keys.size(), value_, std::nullopt);
  for (const auto* more : {&keys_.readers, &keys_.queues, &keys_.tickets})
    keys.insert(keys.end(), more->begin(), more->end());
  return set_lease_request(rw_set_lease_script(), keys, keys_.leases.size(), value_, std::nullopt);
}

namespace {

// make_lock_set_wait's wait: each step an async call on the client's strand.
class LockSetWait final : public TurnWaitHandle, public std::enable_shared_from_this<LockSetWait> {
 public:
  LockSetWait(Client& client, LockSetTry attempt, std::function<TurnWait(std::size_t)> turn_for,
              Clock::time_point deadline, TurnWaitDone done)
      : client_(client),
        attempt_(std::move(attempt)),
        turn_for_(std::move(turn_for)),
        deadline_(deadline),
        done_(std::move(done)) {}

  void start() override { try_all(); }

  // From any thread: ends the wait with operation_aborted, giving back whatever it holds.
  void cancel() override {
    asio::post(client_.get_executor(), [self = shared_from_this()] {
      self->cancelled_ = true;
      if (self->waiting_)
        self->waiting_->cancel();  // on_one() then ends the wait
    });
  }

 private:
  void try_all() {
    client_.async_process(attempt_, tried_diagnostics_,
                          [self = shared_from_this()](std::error_code ec, LockSetTried tried) {
                            self->on_tried(ec, std::move(tried));
                          });
  }

  void on_tried(std::error_code ec, LockSetTried tried) {
    if (!ec && tried.lease) {
      one_.reset();  // a name of the set now
      if (cancelled_) {
        give_back(std::move(tried.lease));
        return finish(asio::error::operation_aborted);
      }
      return finish({}, {}, std::move(tried.lease));
    }
    if (one_)
      give_back(std::move(one_));
    if (ec)
      return finish(ec, tried_diagnostics_.message());
    if (cancelled_)
      return finish(asio::error::operation_aborted);
    if (Clock::now() >= deadline_)
      return finish({});
    TurnWait wait = turn_for_(tried.busy);
    wait.id = attempt_.id();
    wait.holder = attempt_.holder();
    waiting_ = make_turn_wait(client_, std::move(wait),
                              [self = shared_from_this()](std::error_code ec, std::string detail,
                                                          std::shared_ptr<LeaseState> one) {
                                self->on_one(ec, std::move(detail), std::move(one));
                              });
    waiting_->start();
  }

  void on_one(std::error_code ec, std::string detail, std::shared_ptr<LeaseState> one) {
    waiting_.reset();
    if (ec || !one)
      return finish(ec, std::move(detail));
    one_ = std::move(one);
    if (cancelled_) {
      give_back(std::move(one_));
      return finish(asio::error::operation_aborted);
    }
    try_all();
  }

  // Best effort, not waited for: a lease not given back runs out at its TTL.
  void give_back(std::shared_ptr<LeaseState> lease) {
    client_.async_process(ReleaseLock<void>(std::move(lease)), [](std::error_code, bool) {});
  }

  void finish(std::error_code ec, std::string detail = {},
              std::shared_ptr<LeaseState> lease = nullptr) {
    if (done_) {
      TurnWaitDone done = std::move(done_);
      done(ec, std::move(detail), std::move(lease));
    }
  }

  Client& client_;
  const LockSetTry attempt_;
  const std::function<TurnWait(std::size_t)> turn_for_;
  const Clock::time_point deadline_;
  TurnWaitDone done_;
  Diagnostics tried_diagnostics_;  // of the try in flight
  std::shared_ptr<TurnWaitHandle> waiting_;
  std::shared_ptr<LeaseState> one_;  // the busy name's lease, taken in turn
  bool cancelled_ = false;
};

}  // namespace

std::shared_ptr<TurnWaitHandle> make_lock_set_wait(Client& client, LockSetTry attempt,
                                                   std::function<TurnWait(std::size_t)> turn_for,
                                                   Clock::time_point deadline, TurnWaitDone done) {
  return std::make_shared<LockSetWait>(client, std::move(attempt), std::move(turn_for), deadline,
                                       std::move(done));
}

}  // namespace leasehold::detail
