// A Redis Cluster as one transport: one pipelined connection (a ServerConnection) per master, every
// call routed by the hash slot of its keys.
//
// All state, and every node's connection, lives on one strand, so routing needs no locks and a
// node's replies reach the router without a hop. The slot map comes from CLUSTER SLOTS, asked of
// every known master (and of the seeds when none answers) at start, after MOVED, CLUSTERDOWN or a
// lost connection, and every cluster_refresh_interval. A master that no longer serves slots is
// retired: the calls it never sent (and retry-safe ones in flight) are routed again.
//
// Redirections: MOVED updates the slot's owner and sends the request there; ASK sends ASKING and
// the request to the target, once; TRYAGAIN and CLUSTERDOWN are retried after a short delay until
// the call's deadline. None of them ran the command, so sending again is always safe. What each
// answer means, and where each request goes, is decided by the router (cluster_router.hpp); this
// class sends, waits and carries the decisions out.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>
#include "leasehold/detail/timer.hpp"

#include "cluster_router.hpp"
#include "cluster_subscriptions.hpp"
#include "server_connection.hpp"
#include "transport.hpp"

namespace leasehold::detail {

class ClusterConnection final : public TransportBase {
 public:
  // `tls` (from make_tls_context) for a rediss-cluster:// URL, null otherwise; every node's
  // connection uses it.
  ClusterConnection(asio::io_context::executor_type executor, RedisUrl url, ClientOptions options,
                    ServerConnection::TlsContext tls = nullptr);

  void start();

  Clock::time_point now() const noexcept override { return Clock::now(); }
  Notifications& notifications() override;

 private:
  struct Node {
    RedisUrl::Endpoint endpoint;
    std::shared_ptr<ServerConnection> core;
  };
  struct Call;
  class RouterOperation;
  using CallPtr = std::shared_ptr<Call>;

  std::shared_ptr<ClusterConnection> self() {
    return std::static_pointer_cast<ClusterConnection>(shared_from_this());
  }
  std::unique_ptr<Operation> prepare(std::unique_ptr<Operation> operation) override;
  void accept(std::unique_ptr<Operation> operation) override;
  void cancel(std::uint64_t id, asio::cancellation_type type) override;
  bool ready() const override { return has_slot_map_; }
  void shut_down(const Failure& closed) override;
  void notify_connect_waiters(const Failure& failure) override;
  void resolve_unknown_keys(const CallPtr& call);
  void route(const CallPtr& call, std::vector<std::size_t> indices);
  void send(const CallPtr& call, Node& node, std::vector<std::size_t> indices, bool asking);
  void on_replies(const CallPtr& call, const std::string& address, std::vector<std::size_t> indices,
                  bool asking, std::error_code ec, std::string detail, std::vector<Reply> replies);
  void park(const CallPtr& call, std::vector<std::size_t> indices);
  void retry_later(const CallPtr& call, std::size_t index, std::chrono::milliseconds delay);
  void fail(const CallPtr& call, std::error_code ec, std::string detail);
  void finish_if_done(const CallPtr& call);

  Node& node_at(const RedisUrl::Endpoint& endpoint);
  void refresh_soon();
  void refresh();
  void on_slots(std::uint64_t generation, const RedisUrl::Endpoint& asked, std::error_code ec,
                std::string detail, std::vector<Reply> replies);
  void apply_slots(const std::vector<SlotRange>& ranges);
  void refresh_failed(Failure failure);
  void route_parked();
  void expire_parked();
  void arm_parked_timer();
  void fail_everything(const Failure& failure);
  asio::awaitable<void> refresh_loop();

  const ServerConnection::TlsContext tls_;
  std::shared_ptr<ClusterSubscriptions> subscriptions_;  // made at the first watch

  std::map<std::string, Node> nodes_;  // by address; masters, and seeds being asked
  SlotMap<Node> slots_;                // points into nodes_
  // Calls, or the requests of calls (indices), that wait for a node to serve their slot; a call
  // whose keys are not known yet waits with no indices.
  std::vector<std::pair<CallPtr, std::vector<std::size_t>>> parked_;
  // Calls whose caller may cancel them, by Operation::id, until they are done.
  std::unordered_map<std::uint64_t, std::weak_ptr<Call>> cancellable_;
  Timer parked_timer_;
  Timer refresh_timer_;       // the periodic refresh
  Timer refresh_soon_timer_;  // coalesces refreshes asked for by errors

  std::uint64_t refresh_generation_ = 0;
  std::size_t refresh_pending_ = 0;  // CLUSTER SLOTS calls of this generation still out
  bool refreshing_ = false;
  bool refresh_again_ = false;
  bool refresh_scheduled_ = false;
  bool has_slot_map_ = false;
  Failure last_refresh_failure_;
};

}  // namespace leasehold::detail
