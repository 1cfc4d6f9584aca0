#include "cluster_core.hpp"

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <charconv>
#include <numeric>

#include "cluster_protocol.hpp"
#include "codec.hpp"
#include "leasehold/slot.hpp"

namespace leasehold::detail {
namespace {

// More redirections than this for one request means the cluster's view keeps changing under us.
constexpr int kMaxRedirections = 16;
// Refreshes asked for by errors are at least this far apart.
constexpr std::chrono::milliseconds kRefreshSpacing{100};
constexpr std::chrono::milliseconds kTryAgainDelay{25};
constexpr std::chrono::milliseconds kClusterDownDelay{100};

bool starts_with_word(const Reply& reply, std::string_view word) {
  return reply.is_error() && reply.str.starts_with(word) &&
         (reply.str.size() == word.size() || reply.str[word.size()] == ' ');
}

std::vector<std::size_t> all_indices(std::size_t count) {
  std::vector<std::size_t> indices(count);
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  return indices;
}

bool is_connection_failure(std::error_code ec) {
  return ec == errc::connection_lost || ec == errc::connect_failed || ec == errc::connect_timeout ||
         ec == errc::command_timeout;
}

}  // namespace

struct ClusterCore::Call {
  std::unique_ptr<Operation> operation;  // the caller's
  std::vector<Request::Keys> keys;       // per request: what routes it (COMMAND GETKEYS may fill)
  std::vector<std::uint16_t> slots;
  std::vector<Reply> replies;
  std::size_t unanswered = 0;
  Clock::time_point deadline;
  int redirections = 0;
  bool keys_known = false;
  bool done = false;

  const Request& request(std::size_t index) const { return operation->requests()[index]; }
};

// An operation of the router's own (a part of a call for one node, CLUSTER SLOTS, COMMAND
// GETKEYS): its requests, and a function that gets its replies.
class ClusterCore::RouterOperation final : public Operation {
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

ClusterCore::ClusterCore(asio::io_context::executor_type executor, RedisUrl url,
                         ClientOptions options, ClientCore::TlsContext tls)
    : url_(std::move(url)),
      options_(std::move(options)),
      tls_(std::move(tls)),
      strand_(asio::make_strand(std::move(executor))),
      slot_owner_(kClusterSlots, nullptr),
      parked_timer_(strand_, Clock::time_point::max()),
      refresh_timer_(strand_),
      refresh_soon_timer_(strand_) {}

void ClusterCore::start() {
  asio::co_spawn(strand_, refresh_loop(), asio::detached);
}

asio::awaitable<void> ClusterCore::refresh_loop() {
  auto self = shared_from_this();
  refresh();
  while (!closed_ && !fatal_.error) {
    refresh_timer_.expires_after(options_.cluster_refresh_interval);
    std::error_code ignored;
    co_await refresh_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (closed_ || fatal_.error)
      break;
    refresh();
  }
}

void ClusterCore::submit(std::unique_ptr<Operation> operation) {
  if (operation->deadline == Clock::time_point{})
    operation->deadline = operation->sent + options_.command_timeout;
  if (strand_.running_in_this_thread()) {
    accept(std::move(operation));
    return;
  }
  asio::dispatch(strand_, [self = shared_from_this(), operation = std::move(operation)]() mutable {
    self->accept(std::move(operation));
  });
}

void ClusterCore::accept(std::unique_ptr<Operation> operation) {
  if (closed_ || fatal_.error || operation->requests().empty()) {
    Failure failure = fatal_.error ? fatal_
                      : closed_    ? Failure{make_error_code(errc::closed), "the client was closed"}
                                   : Failure{};
    complete_later(shared_from_this(), std::move(operation), failure.error,
                   std::move(failure.detail));
    return;
  }
  auto call = std::make_shared<Call>();
  const std::size_t count = operation->requests().size();
  call->operation = std::move(operation);
  call->replies.resize(count);
  call->unanswered = count;
  call->deadline = call->operation->deadline;
  call->keys_known = true;
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
// the arguments are keys (COMMAND GETKEYS), for every command, with its own key rules.
void ClusterCore::resolve_unknown_keys(const CallPtr& call) {
  Node* master = any_master();
  if (master == nullptr) {
    park(call, {});
    return;
  }
  std::vector<std::size_t> unknown;
  std::vector<Request> lookups;
  for (std::size_t i = 0; i < call->keys.size(); ++i) {
    if (call->keys[i] != Request::Keys::unknown)
      continue;
    const std::vector<std::string> command = codec::parse_command(call->request(i).bytes());
    std::vector<std::string_view> args = {"COMMAND", "GETKEYS"};
    args.insert(args.end(), command.begin(), command.end());
    lookups.push_back(Request::command(std::span<const std::string_view>(args)).without_keys());
    unknown.push_back(i);
  }
  auto lookup = std::make_unique<RouterOperation>(
      std::move(lookups), call->operation->sent, call->deadline,
      [self = shared_from_this(), call, unknown](std::error_code ec, std::string detail,
                                                 std::vector<Reply> replies) {
        if (call->done)
          return;
        if (ec == route_again_error()) {
          self->resolve_unknown_keys(call);
          return;
        }
        if (ec) {
          if (is_connection_failure(ec))
            self->refresh_soon();
          self->fail(call, ec, std::move(detail));
          return;
        }
        for (std::size_t k = 0; k < unknown.size(); ++k) {
          // An error ("no key arguments", an unknown command, wrong arity): any node will do,
          // and answers the call with its own error if there is one.
          if (replies[k].type == Reply::Type::array) {
            for (const Reply& key : replies[k].elements)
              Request::add_key(call->keys[unknown[k]], call->slots[unknown[k]], key.str);
          }
          if (call->keys[unknown[k]] == Request::Keys::unknown)
            call->keys[unknown[k]] = Request::Keys::none;
        }
        call->keys_known = true;
        self->route(call, all_indices(call->keys.size()));
      });
  master->core->submit(std::move(lookup));
}

void ClusterCore::route(const CallPtr& call, std::vector<std::size_t> indices) {
  if (call->done)
    return;
  // Refused before anything of the call is sent.
  for (std::size_t i : indices) {
    if (call->keys[i] == Request::Keys::cross_slot) {
      fail(call, make_error_code(errc::cross_slot),
           "the keys of request " + std::to_string(i + 1) +
               " of the call are in different hash "
               "slots of the Redis Cluster at " +
               url_.address() + ", so no single node can run it; give them a common {hash tag}");
      return;
    }
  }
  std::map<Node*, std::vector<std::size_t>> by_node;
  std::vector<std::size_t> unrouted;
  for (std::size_t i : indices) {
    Node* node =
        call->keys[i] == Request::Keys::one_slot ? slot_owner_[call->slots[i]] : any_master();
    if (node == nullptr)
      unrouted.push_back(i);
    else
      by_node[node].push_back(i);
  }
  for (auto& [node, group] : by_node)
    send(call, *node, std::move(group), false);
  if (!unrouted.empty())
    park(call, std::move(unrouted));
}

// No node serves the slot (yet): wait for the next slot map, up to the call's deadline.
void ClusterCore::park(const CallPtr& call, std::vector<std::size_t> indices) {
  parked_.emplace_back(call, std::move(indices));
  arm_parked_timer();
  refresh_soon();
}

void ClusterCore::send(const CallPtr& call, Node& node, std::vector<std::size_t> indices,
                       bool asking) {
  std::vector<Request> requests;
  requests.reserve(indices.size() + (asking ? 1 : 0));
  if (asking)
    requests.push_back(Request::command({"ASKING"}).without_keys());
  for (std::size_t i : indices)
    requests.push_back(call->request(i));
  node.core->submit(std::make_unique<RouterOperation>(
      std::move(requests), call->operation->sent, call->deadline,
      [self = shared_from_this(), call, address = node.endpoint.address(), indices, asking](
          std::error_code ec, std::string detail, std::vector<Reply> replies) mutable {
        self->on_replies(call, address, std::move(indices), asking, ec, std::move(detail),
                         std::move(replies));
      }));
}

void ClusterCore::on_replies(const CallPtr& call, const std::string& address,
                             std::vector<std::size_t> indices, bool asking, std::error_code ec,
                             std::string detail, std::vector<Reply> replies) {
  if (call->done)
    return;
  if (ec == route_again_error()) {
    route(call, std::move(indices));
    return;
  }
  if (ec) {
    if (fatal_.error) {
      fail(call, fatal_.error, fatal_.detail);
      return;
    }
    if (is_connection_failure(ec))
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
    const bool moved = starts_with_word(reply, "MOVED");
    if (moved || starts_with_word(reply, "ASK")) {
      std::uint16_t slot = 0;
      RedisUrl::Endpoint target;
      if (!parse_redirection(reply.str, slot, target, replying_host)) {
        fail(call, make_error_code(errc::protocol_error),
             "the cluster node " + address + " sent a malformed redirection: " + reply.str);
        return;
      }
      if (++call->redirections > kMaxRedirections) {
        fail(call, make_error_code(errc::server_error),
             "the Redis Cluster at " + url_.address() + " redirected a call more than " +
                 std::to_string(kMaxRedirections) + " times (last: " + reply.str +
                 "); its slot map keeps changing");
        return;
      }
      Node& node = node_at(target);
      if (moved) {
        slot_owner_[slot] = &node;
        refresh_soon();
      }
      send(call, node, {i}, !moved);
      continue;
    }
    const bool try_again = starts_with_word(reply, "TRYAGAIN");
    const bool cluster_down = starts_with_word(reply, "CLUSTERDOWN");
    if (cluster_down)
      refresh_soon();
    if (try_again || cluster_down) {
      const auto delay = try_again ? kTryAgainDelay : kClusterDownDelay;
      // Keys of a slot that is being moved, or a cluster without quorum: the command did not
      // run; try again while there is time, else the caller gets the server's error.
      if (Clock::now() + delay < call->deadline) {
        retry_later(call, i, delay);
        continue;
      }
    }
    call->replies[i] = std::move(reply);
    --call->unanswered;
  }
  finish_if_done(call);
}

void ClusterCore::retry_later(const CallPtr& call, std::size_t index,
                              std::chrono::milliseconds delay) {
  auto timer = std::make_shared<Timer>(strand_, delay);
  timer->async_wait([self = shared_from_this(), call, index, timer](std::error_code) {
    if (self->closed_) {
      self->fail(call, make_error_code(errc::closed), "the client was closed");
      return;
    }
    self->route(call, {index});
  });
}

void ClusterCore::fail(const CallPtr& call, std::error_code ec, std::string detail) {
  if (call->done)
    return;
  call->done = true;
  call->operation->complete(*this, ec, std::move(detail));
}

void ClusterCore::finish_if_done(const CallPtr& call) {
  if (call->done || call->unanswered > 0)
    return;
  call->done = true;
  for (std::size_t i = 0; i < call->replies.size(); ++i)
    call->operation->on_reply(i, std::move(call->replies[i]));
  call->operation->complete(*this, {}, {});
}

ClusterCore::Node& ClusterCore::node_at(const RedisUrl::Endpoint& endpoint) {
  const std::string address = endpoint.address();
  auto it = nodes_.find(address);
  if (it == nodes_.end()) {
    auto core = std::make_shared<ClientCore>(strand_, url_.node(endpoint), options_, tls_);
    core->start();
    it = nodes_.emplace(address, Node{endpoint, std::move(core)}).first;
  }
  return it->second;
}

ClusterCore::Node* ClusterCore::any_master() {
  while (!masters_.empty()) {
    const std::string& address = masters_[next_master_++ % masters_.size()];
    auto it = nodes_.find(address);
    if (it != nodes_.end())
      return &it->second;
    masters_.erase(std::find(masters_.begin(), masters_.end(), address));
  }
  return nullptr;
}

void ClusterCore::refresh_soon() {
  if (closed_ || fatal_.error)
    return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  if (refresh_scheduled_)
    return;
  refresh_scheduled_ = true;
  refresh_soon_timer_.expires_after(kRefreshSpacing);
  refresh_soon_timer_.async_wait([self = shared_from_this()](std::error_code) {
    self->refresh_scheduled_ = false;
    self->refresh();
  });
}

void ClusterCore::refresh() {
  if (closed_ || fatal_.error)
    return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  refreshing_ = true;
  refresh_again_ = false;
  const std::uint64_t generation = ++refresh_generation_;
  // Every master is asked and the first slot map that comes back wins: a master that died
  // only delays its own answer. The seeds are asked too until a map was had, and whenever no
  // master answered last time.
  std::vector<RedisUrl::Endpoint> asked;
  for (const std::string& address : masters_) {
    auto it = nodes_.find(address);
    if (it != nodes_.end())
      asked.push_back(it->second.endpoint);
  }
  if (!has_slot_map_ || last_refresh_failure_.error || asked.empty()) {
    for (const RedisUrl::Endpoint& seed : url_.seeds) {
      if (std::find(asked.begin(), asked.end(), seed) == asked.end())
        asked.push_back(seed);
    }
  }
  refresh_pending_ = asked.size();
  const Clock::time_point now = Clock::now();
  for (const RedisUrl::Endpoint& endpoint : asked) {
    std::vector<Request> requests;
    requests.push_back(Request::command({"CLUSTER", "SLOTS"}).without_keys());
    node_at(endpoint).core->submit(std::make_unique<RouterOperation>(
        std::move(requests), now, now + options_.command_timeout,
        [self = shared_from_this(), generation, endpoint](std::error_code ec, std::string detail,
                                                          std::vector<Reply> replies) {
          self->on_slots(generation, endpoint, ec, std::move(detail), std::move(replies));
        }));
  }
}

void ClusterCore::on_slots(std::uint64_t generation, const RedisUrl::Endpoint& asked,
                           std::error_code ec, std::string detail, std::vector<Reply> replies) {
  if (generation != refresh_generation_ || !refreshing_ || closed_)
    return;
  --refresh_pending_;
  Failure failure;
  if (ec == route_again_error()) {
    failure = {make_error_code(errc::connection_lost),
               "the cluster node " + asked.address() + " left while asked for the slot map"};
  } else if (ec) {
    failure = {ec, std::move(detail)};
    // Credentials and certificates are the same for every node: one refusal is everyone's.
    if (ec == errc::auth_failed || ec == errc::tls_failed) {
      fatal_ = failure;
      fail_everything(failure);
      return;
    }
  } else if (replies.front().is_error()) {
    const std::string& message = replies.front().str;
    if (message.find("cluster support disabled") != std::string::npos) {
      fatal_ = {make_error_code(errc::connect_failed),
                "the server at " + asked.address() +
                    " is not a Redis Cluster node (cluster support is disabled); use a redis:// "
                    "URL for a single server"};
      fail_everything(fatal_);
      return;
    }
    failure = {classify_error_reply(message),
               "the cluster node " + asked.address() + " refused CLUSTER SLOTS: " + message};
  } else if (apply_slots(asked, replies.front())) {
    return;
  } else {
    failure = {make_error_code(errc::server_error),
               "the cluster node " + asked.address() +
                   " answered CLUSTER SLOTS with no slots assigned; is the cluster created?"};
  }
  if (refresh_pending_ == 0) {
    refreshing_ = false;
    refresh_failed(std::move(failure));
  } else {
    last_refresh_failure_ = std::move(failure);
  }
}

bool ClusterCore::apply_slots(const RedisUrl::Endpoint& asked, const Reply& slots) {
  std::vector<SlotRange> ranges;
  if (!parse_slot_map(slots, asked.host, ranges))
    return false;
  std::vector<Node*> owner(kClusterSlots, nullptr);
  std::vector<std::string> masters;
  for (const SlotRange& range : ranges) {
    Node& node = node_at(range.master);
    for (std::size_t slot = range.first; slot <= range.last; ++slot)
      owner[slot] = &node;
    const std::string address = range.master.address();
    if (std::find(masters.begin(), masters.end(), address) == masters.end())
      masters.push_back(address);
  }
  slot_owner_ = std::move(owner);
  masters_ = std::move(masters);
  has_slot_map_ = true;
  refreshing_ = false;
  last_refresh_failure_ = {};

  // Nodes that serve no slot (a failed master, a seed that is a replica) are retired; what they
  // hold goes to the new owners.
  std::vector<std::shared_ptr<ClientCore>> retired;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (std::find(masters_.begin(), masters_.end(), it->first) == masters_.end()) {
      retired.push_back(std::move(it->second.core));
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& core : retired)
    core->retire();
  route_parked();
  notify_connect_waiters({});
  if (refresh_again_) {
    refresh_again_ = false;
    refresh_soon();
  }
  return true;
}

void ClusterCore::refresh_failed(Failure failure) {
  last_refresh_failure_ = std::move(failure);
  notify_connect_waiters(last_refresh_failure_);
  refresh_soon();
}

void ClusterCore::route_parked() {
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

void ClusterCore::arm_parked_timer() {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& entry : parked_)
    next = std::min(next, entry.first->deadline);
  if (next == parked_timer_.expiry())
    return;
  parked_timer_.expires_at(next);
  parked_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (!ec)
      self->expire_parked();
  });
}

void ClusterCore::expire_parked() {
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
    std::string why =
        "no node of the Redis Cluster at " + url_.address() + " served the call's slot within " +
        std::to_string(options_.command_timeout.count()) + " ms; the call was not sent";
    if (last_refresh_failure_.error)
      why += " (" + last_refresh_failure_.detail + ")";
    fail(call, make_error_code(errc::command_timeout), std::move(why));
  }
  parked_ = std::move(keep);
  parked_timer_.expires_at(Clock::time_point::max());
  arm_parked_timer();
}

void ClusterCore::when_connected(UniqueFunction<void(std::error_code, std::string)> callback) {
  asio::post(strand_, [self = shared_from_this(), callback = std::move(callback)]() mutable {
    if (self->fatal_.error)
      callback(self->fatal_.error, self->fatal_.detail);
    else if (self->closed_)
      callback(make_error_code(errc::closed), "the client was closed");
    else {
      self->connect_waiters_.push_back(std::move(callback));
      if (self->has_slot_map_)
        self->notify_connect_waiters({});
    }
  });
}

void ClusterCore::notify_connect_waiters(const Failure& failure) {
  auto waiters = std::move(connect_waiters_);
  connect_waiters_.clear();
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
  std::vector<std::shared_ptr<ClientCore>> cores;
  for (const std::string& address : masters_) {
    auto it = nodes_.find(address);
    if (it != nodes_.end())
      cores.push_back(it->second.core);
  }
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

void ClusterCore::fail_everything(const Failure& failure) {
  auto parked = std::move(parked_);
  parked_.clear();
  for (auto& entry : parked)
    fail(entry.first, failure.error, failure.detail);
  notify_connect_waiters(failure);
  for (auto& [address, node] : nodes_)
    node.core->close();
  nodes_.clear();
  masters_.clear();
  std::fill(slot_owner_.begin(), slot_owner_.end(), nullptr);
  parked_timer_.cancel();
  refresh_timer_.cancel();
  refresh_soon_timer_.cancel();
}

void ClusterCore::close() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->closed_)
      return;
    self->closed_ = true;
    self->fail_everything({make_error_code(errc::closed), "the client was closed"});
  });
}

}  // namespace leasehold::detail
