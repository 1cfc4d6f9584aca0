#include "cluster_connection.hpp"

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <numeric>

#include "cluster_forms.hpp"

namespace leasehold::detail {
namespace {

// Refreshes asked for by errors are at least this far apart.
constexpr std::chrono::milliseconds kRefreshSpacing{100};

std::vector<std::size_t> all_indices(std::size_t count) {
  std::vector<std::size_t> indices(count);
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  return indices;
}

}  // namespace

struct ClusterConnection::Call {
  std::unique_ptr<Operation> operation;  // the caller's
  std::vector<Request::Keys> keys;       // per request: what routes it (COMMAND GETKEYS may fill)
  std::vector<std::uint16_t> slots;
  std::vector<Reply> replies;
  std::size_t unanswered = 0;
  Clock::time_point deadline;
  int redirections = 0;
  bool keys_known = false;
  bool sent = false;  // a request of it went to a node: it may have run
  bool done = false;

  const Request& request(std::size_t index) const { return operation->requests()[index]; }
};

// An operation of the router's own (a part of a call for one node, CLUSTER SLOTS, COMMAND
// GETKEYS): its requests, and a function that gets its replies.
class ClusterConnection::RouterOperation final : public Operation {
 public:
  using Done = UniqueFunction<void(std::error_code, std::string, std::vector<Reply>)>;

  RouterOperation(std::vector<Request> requests, Clock::time_point sent_at,
                  Clock::time_point deadline_at, Done done)
      : requests_(std::move(requests)), replies_(requests_.size()), done_(std::move(done)) {
    set_requests(requests_);
    sent = sent_at;
    deadline = deadline_at;
  }

  void on_reply(std::size_t index, Reply&& reply) override { replies_[index] = std::move(reply); }
  void complete(Transport&, std::error_code error, std::string detail) override {
    done_(error, std::move(detail), error ? std::vector<Reply>{} : std::move(replies_));
  }

 private:
  std::vector<Request> requests_;
  std::vector<Reply> replies_;
  Done done_;
};

ClusterConnection::ClusterConnection(asio::io_context::executor_type executor, RedisUrl url,
                                     ClientOptions options, ServerConnection::TlsContext tls)
    : TransportBase(asio::make_strand(std::move(executor)), std::move(url), std::move(options)),
      tls_(std::move(tls)),
      parked_timer_(strand_, Clock::time_point::max()),
      refresh_timer_(strand_),
      refresh_soon_timer_(strand_) {}

void ClusterConnection::start() {
  asio::co_spawn(strand_, refresh_loop(), asio::detached);
}

asio::awaitable<void> ClusterConnection::refresh_loop() {
  auto self = shared_from_this();
  refresh();
  while (open()) {
    refresh_timer_.expires_after(options_.cluster_refresh_interval);
    std::error_code ignored;
    co_await refresh_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (!open())
      break;
    refresh();
  }
}

// A request with a cluster form goes as that form, one over keys of several slots that has parts
// as its parts.
std::unique_ptr<Operation> ClusterConnection::prepare(std::unique_ptr<Operation> operation) {
  return sent_in_cluster_forms(std::move(operation));
}

void ClusterConnection::accept(std::unique_ptr<Operation> operation) {
  auto call = std::make_shared<Call>();
  const std::size_t count = operation->requests().size();
  call->operation = std::move(operation);
  call->replies.resize(count);
  call->unanswered = count;
  call->deadline = call->operation->deadline;
  call->keys_known = true;
  if (call->operation->id != 0)
    cancellable_.emplace(call->operation->id, call);
  for (const Request& request : call->operation->requests()) {
    const auto [keys, slot] = request.keys_and_slot();
    call->keys.push_back(keys);
    call->slots.push_back(slot);
    if (keys == Request::Keys::unknown)
      call->keys_known = false;
  }
  if (!call->keys_known) {
    resolve_unknown_keys(call);
    return;
  }
  route(call, all_indices(count));
}

// Commands whose builder did not declare their keys (raw Commands): the server says which of
// the arguments are keys.
void ClusterConnection::resolve_unknown_keys(const CallPtr& call) {
  Node* master = slots_.next_master();
  if (master == nullptr) {
    park(call, {});
    return;
  }
  std::vector<std::size_t> unknown;
  std::vector<Request> lookups = key_lookups(call->operation->requests(), call->keys, unknown);
  auto lookup = std::make_unique<RouterOperation>(
      std::move(lookups), call->operation->sent, call->deadline,
      [self = self(), call, unknown](std::error_code ec, std::string detail,
                                     std::vector<Reply> replies) {
        if (call->done)
          return;
        if (ec) {
          const NodeErrorVerdict verdict = judge_node_error(ec);
          if (verdict.action == NodeErrorVerdict::Action::route_again) {
            self->resolve_unknown_keys(call);
            return;
          }
          if (verdict.refresh_map)
            self->refresh_soon();
          self->fail(call, ec, std::move(detail));
          return;
        }
        apply_key_lookups(unknown, replies, call->keys, call->slots);
        call->keys_known = true;
        self->route(call, all_indices(call->keys.size()));
      });
  master->core->submit(std::move(lookup));
}

void ClusterConnection::cancel(std::uint64_t id, asio::cancellation_type type) {
  const auto it = cancellable_.find(id);
  if (it == cancellable_.end())
    return;
  const CallPtr call = it->second.lock();
  const std::optional<Pipeline::CancelScope> scope = cancel_scope(type);
  if (!call || !scope || (call->sent && *scope == Pipeline::CancelScope::unsent))
    return;
  // Requests still queued at a node go out all the same; an acquire among them is released
  // behind them, as for an unknown outcome.
  call->operation->handed_out = call->sent;
  fail(call, asio::error::operation_aborted,
       call->sent ? "the call was cancelled after it was sent to the cluster at " + url_.address() +
                        "; it may or may not have run"
                  : "the call was cancelled before it was sent");
}

void ClusterConnection::route(const CallPtr& call, std::vector<std::size_t> indices) {
  if (call->done)
    return;
  SlotMap<Node>::Plan plan = slots_.plan(call->keys, call->slots, indices);
  if (plan.cross_slot) {
    // Refused before anything of the call is sent.
    Failure failure = cross_slot_failure(*plan.cross_slot, url_.address());
    fail(call, failure.error, std::move(failure.detail));
    return;
  }
  for (auto& [node, group] : plan.by_node)
    send(call, *node, std::move(group), false);
  if (!plan.unrouted.empty())
    park(call, std::move(plan.unrouted));
}

// No node serves the slot (yet): wait for the next slot map, up to the call's deadline.
void ClusterConnection::park(const CallPtr& call, std::vector<std::size_t> indices) {
  parked_.emplace_back(call, std::move(indices));
  arm_parked_timer();
  refresh_soon();
}

void ClusterConnection::send(const CallPtr& call, Node& node, std::vector<std::size_t> indices,
                             bool asking) {
  std::vector<Request> requests;
  requests.reserve(indices.size() + (asking ? 1 : 0));
  if (asking)
    requests.push_back(Request::command({"ASKING"}).without_keys());
  for (std::size_t i : indices)
    requests.push_back(call->request(i));
  call->sent = true;
  node.core->submit(std::make_unique<RouterOperation>(
      std::move(requests), call->operation->sent, call->deadline,
      [self = self(), call, address = node.endpoint.address(), indices, asking](
          std::error_code ec, std::string detail, std::vector<Reply> replies) mutable {
        self->on_replies(call, address, std::move(indices), asking, ec, std::move(detail),
                         std::move(replies));
      }));
}

void ClusterConnection::on_replies(const CallPtr& call, const std::string& address,
                                   std::vector<std::size_t> indices, bool asking,
                                   std::error_code ec, std::string detail,
                                   std::vector<Reply> replies) {
  if (call->done)
    return;
  if (ec) {
    const NodeErrorVerdict verdict = judge_node_error(ec);
    if (verdict.action == NodeErrorVerdict::Action::route_again) {
      route(call, std::move(indices));
      return;
    }
    if (fatal().error) {
      fail(call, fatal().error, fatal().detail);
      return;
    }
    if (verdict.refresh_map)
      refresh_soon();
    fail(call, ec, std::move(detail));
    return;
  }
  const std::size_t offset = asking ? 1 : 0;  // the reply to ASKING
  const auto nodes_entry = nodes_.find(address);
  const std::string replying_host =
      nodes_entry != nodes_.end() ? nodes_entry->second.endpoint.host : url_.host;
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const std::size_t i = indices[k];
    Reply& reply = replies[k + offset];
    if (reply.is_error()) {  // else delivered as it is; only an error can be a redirection
      ReplyVerdict verdict = judge_reply(reply, {address, replying_host, url_.address(),
                                                 call->redirections, Clock::now(), call->deadline});
      if (verdict.refresh_map)
        refresh_soon();
      switch (verdict.action) {
        case ReplyVerdict::Action::deliver:
          break;
        case ReplyVerdict::Action::follow:
        case ReplyVerdict::Action::ask: {
          ++call->redirections;
          const bool moved = verdict.action == ReplyVerdict::Action::follow;
          Node& node = node_at(verdict.target);
          if (moved)
            slots_.set_owner(verdict.slot, node);
          send(call, node, {i}, !moved);
          continue;
        }
        case ReplyVerdict::Action::retry_later:
          retry_later(call, i, verdict.delay);
          continue;
        case ReplyVerdict::Action::fail:
          fail(call, verdict.failure.error, std::move(verdict.failure.detail));
          return;
      }
    }
    call->replies[i] = std::move(reply);
    --call->unanswered;
  }
  finish_if_done(call);
}

void ClusterConnection::retry_later(const CallPtr& call, std::size_t index,
                                    std::chrono::milliseconds delay) {
  auto timer = std::make_shared<Timer>(strand_, delay);
  timer->async_wait([self = self(), call, index, timer](std::error_code) {
    if (self->closed()) {
      self->fail(call, make_error_code(errc::closed), "the client was closed");
      return;
    }
    self->route(call, {index});
  });
}

void ClusterConnection::fail(const CallPtr& call, std::error_code ec, std::string detail) {
  if (call->done)
    return;
  call->done = true;
  if (call->operation->id != 0)
    cancellable_.erase(call->operation->id);
  call->operation->complete(*this, ec, std::move(detail));
}

void ClusterConnection::finish_if_done(const CallPtr& call) {
  if (call->done || call->unanswered > 0)
    return;
  call->done = true;
  if (call->operation->id != 0)
    cancellable_.erase(call->operation->id);
  for (std::size_t i = 0; i < call->replies.size(); ++i)
    call->operation->on_reply(i, std::move(call->replies[i]));
  call->operation->complete(*this, {}, {});
}

ClusterConnection::Node& ClusterConnection::node_at(const RedisUrl::Endpoint& endpoint) {
  const std::string address = endpoint.address();
  auto it = nodes_.find(address);
  if (it == nodes_.end()) {
    auto core = std::make_shared<ServerConnection>(strand_, url_.node(endpoint), options_, tls_);
    core->start();
    it = nodes_.emplace(address, Node{endpoint, std::move(core)}).first;
  }
  return it->second;
}

void ClusterConnection::refresh_soon() {
  if (!open())
    return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  if (refresh_scheduled_)
    return;
  refresh_scheduled_ = true;
  refresh_soon_timer_.expires_after(kRefreshSpacing);
  refresh_soon_timer_.async_wait([self = self()](std::error_code) {
    self->refresh_scheduled_ = false;
    self->refresh();
  });
}

void ClusterConnection::refresh() {
  if (!open())
    return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  refreshing_ = true;
  refresh_again_ = false;
  const std::uint64_t generation = ++refresh_generation_;
  std::vector<RedisUrl::Endpoint> masters;
  for (const Node* master : slots_.masters())
    masters.push_back(master->endpoint);
  const std::vector<RedisUrl::Endpoint> asked = slot_map_sources(
      std::move(masters), url_.seeds, has_slot_map_, bool(last_refresh_failure_.error));
  refresh_pending_ = asked.size();
  const Clock::time_point now = Clock::now();
  for (const RedisUrl::Endpoint& endpoint : asked) {
    std::vector<Request> requests;
    requests.push_back(Request::command({"CLUSTER", "SLOTS"}).without_keys());
    node_at(endpoint).core->submit(std::make_unique<RouterOperation>(
        std::move(requests), now, now + options_.command_timeout,
        [self = self(), generation, endpoint](std::error_code ec, std::string detail,
                                              std::vector<Reply> replies) {
          self->on_slots(generation, endpoint, ec, std::move(detail), std::move(replies));
        }));
  }
}

void ClusterConnection::on_slots(std::uint64_t generation, const RedisUrl::Endpoint& asked,
                                 std::error_code ec, std::string detail,
                                 std::vector<Reply> replies) {
  if (generation != refresh_generation_ || !refreshing_ || closed())
    return;
  --refresh_pending_;
  SlotsVerdict verdict = judge_slots_reply(asked, ec, std::move(detail), replies);
  switch (verdict.action) {
    case SlotsVerdict::Action::apply:
      apply_slots(verdict.ranges);
      return;
    case SlotsVerdict::Action::fatal:
      set_fatal(std::move(verdict.failure));
      fail_everything(fatal());
      return;
    case SlotsVerdict::Action::failed:
      break;
  }
  if (refresh_pending_ == 0) {
    refreshing_ = false;
    refresh_failed(std::move(verdict.failure));
  } else {
    last_refresh_failure_ = std::move(verdict.failure);
  }
}

void ClusterConnection::apply_slots(const std::vector<SlotRange>& ranges) {
  slots_.assign(ranges,
                [this](const RedisUrl::Endpoint& master) -> Node& { return node_at(master); });
  has_slot_map_ = true;
  refreshing_ = false;
  last_refresh_failure_ = {};

  // Nodes that serve no slot (a failed master, a seed that is a replica) are retired; what they
  // hold goes to the new owners.
  std::vector<std::shared_ptr<ServerConnection>> retired;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (!slots_.is_master(&it->second)) {
      retired.push_back(std::move(it->second.core));
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& core : retired)
    core->retire();
  if (subscriptions_)
    subscriptions_->reroute();
  route_parked();
  notify_connect_waiters({});
  if (refresh_again_) {
    refresh_again_ = false;
    refresh_soon();
  }
}

void ClusterConnection::refresh_failed(Failure failure) {
  last_refresh_failure_ = std::move(failure);
  notify_connect_waiters(last_refresh_failure_);
  refresh_soon();
}

void ClusterConnection::route_parked() {
  auto parked = std::move(parked_);
  parked_.clear();
  for (auto& [call, indices] : parked) {
    if (call->done)
      continue;
    if (!call->keys_known)
      resolve_unknown_keys(call);
    else
      route(call, std::move(indices));
  }
  arm_parked_timer();
}

void ClusterConnection::arm_parked_timer() {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& entry : parked_)
    next = std::min(next, entry.first->deadline);
  if (next == parked_timer_.expiry())
    return;
  parked_timer_.expires_at(next);
  parked_timer_.async_wait([self = self()](std::error_code ec) {
    if (!ec)
      self->expire_parked();
  });
}

void ClusterConnection::expire_parked() {
  const Clock::time_point now = Clock::now();
  decltype(parked_) keep;
  for (auto& entry : parked_) {
    const CallPtr& call = entry.first;
    if (call->done)
      continue;
    if (call->deadline > now) {
      keep.push_back(std::move(entry));
      continue;
    }
    Failure failure =
        unserved_failure(url_.address(), options_.command_timeout, last_refresh_failure_);
    fail(call, failure.error, std::move(failure.detail));
  }
  parked_ = std::move(keep);
  parked_timer_.expires_at(Clock::time_point::max());
  arm_parked_timer();
}

void ClusterConnection::notify_connect_waiters(const Failure& failure) {
  auto waiters = take_connect_waiters();
  if (failure.error) {
    for (auto& waiter : waiters)
      waiter(failure.error, failure.detail);
    return;
  }
  if (waiters.empty())
    return;
  // Connected: every master's connection had its outcome; the first failure is reported.
  struct Pending {
    std::size_t remaining = 0;
    Failure first_failure;
    std::vector<UniqueFunction<void(std::error_code, std::string)>> waiters;
  };
  auto pending = std::make_shared<Pending>();
  pending->waiters = std::move(waiters);
  std::vector<std::shared_ptr<ServerConnection>> cores;
  for (const Node* master : slots_.masters())
    cores.push_back(master->core);
  pending->remaining = cores.size();
  auto report = [pending] {
    for (auto& waiter : pending->waiters)
      waiter(pending->first_failure.error, pending->first_failure.detail);
  };
  if (cores.empty()) {
    report();
    return;
  }
  for (auto& core : cores) {
    core->when_connected([pending, report](std::error_code ec, std::string detail) {
      if (ec && !pending->first_failure.error)
        pending->first_failure = {ec, std::move(detail)};
      if (--pending->remaining == 0)
        report();
    });
  }
}

void ClusterConnection::fail_everything(const Failure& failure) {
  auto parked = std::move(parked_);
  parked_.clear();
  for (auto& entry : parked)
    fail(entry.first, failure.error, failure.detail);
  notify_connect_waiters(failure);
  for (auto& [address, node] : nodes_)
    node.core->close();
  slots_.clear();
  nodes_.clear();
  parked_timer_.cancel();
  refresh_timer_.cancel();
  refresh_soon_timer_.cancel();
}

Notifications& ClusterConnection::notifications() {
  if (!subscriptions_) {
    subscriptions_ = std::make_shared<ClusterSubscriptions>(
        strand_,
        [this](std::uint16_t slot) -> std::shared_ptr<ServerConnection> {
          Node* node = slots_.owner(slot);
          return node != nullptr ? node->core : nullptr;
        },
        [this] { refresh_soon(); });
    if (!open())
      subscriptions_->close();
  }
  return *subscriptions_;
}

void ClusterConnection::shut_down(const Failure& closed) {
  if (subscriptions_)
    subscriptions_->close();
  fail_everything(closed);
}

}  // namespace leasehold::detail
