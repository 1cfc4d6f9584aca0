#include "client_operations.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "leasehold/log.hpp"
#include "transport.hpp"

namespace leasehold::detail {
namespace {

// The script calls of an operation that Redis answered NOSCRIPT (the script cache was flushed
// or the server restarted; nothing ran), sent again as EVAL, which caches the script again. Their
// replies go to the original operation, which then completes.
//
// A script call that a cluster sent after ASKING (to a node that imports its slot) needs ASKING
// again right before its EVAL.
class EvalFallback final : public Operation {
 public:
  EvalFallback(std::unique_ptr<Operation> original,
               const std::function<Request(const Request&)>& as_eval)
      : original_(std::move(original)) {
    static const Request asking = Request::command({"ASKING"}).without_keys();
    const std::span<const Request> requests = original_->requests();
    for (std::size_t index : original_->noscript_replies) {
      if (index > 0 && requests[index - 1].bytes() == asking.bytes()) {
        fallbacks_.push_back(asking);
        originals_.push_back(kNone);
      }
      fallbacks_.push_back(as_eval(requests[index]));
      originals_.push_back(index);
    }
    set_requests(fallbacks_);
    sent = original_->sent;
    deadline = original_->deadline;
    id = original_->id;
  }

  void on_reply(std::size_t index, Reply&& reply) override {
    if (originals_[index] != kNone)
      original_->on_reply(originals_[index], std::move(reply));
  }
  void complete(Transport& core, std::error_code error, std::string detail) override {
    original_->complete(core, error, std::move(detail));
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::unique_ptr<Operation> original_;
  std::vector<Request> fallbacks_;
  std::vector<std::size_t> originals_;  // the original's index per fallback; kNone for ASKING
};

// ClientOptions::replica_acks: the replies to lease grants are held back until WAIT, sent on the
// same connection after the operation's replies came, says enough replicas have them (WAIT
// covers every write sent before it on the connection). Too few: the grants' replies become
// NOTREPLICATED errors (errc::not_replicated), and the query releases what it took.
struct HeldGrants {
  std::unique_ptr<Operation> operation;
  std::vector<std::optional<Reply>> replies;  // by request index: the held grant replies
  int replicas = 0;
  std::chrono::milliseconds timeout{0};

  // Hands the held replies (or NOTREPLICATED errors instead, if `why` is not empty) over.
  void hand_over(const std::string& why) {
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (replies[i])
        operation->on_reply(i, why.empty() ? std::move(*replies[i]) : Reply::make_error(why));
    }
  }
};

class WaitForReplicas final : public Operation {
 public:
  explicit WaitForReplicas(HeldGrants grants)
      : replicas_(grants.replicas),
        timeout_(grants.timeout),
        request_(
            Request::command({"WAIT", std::to_string(replicas_), std::to_string(timeout_.count())})
                .without_keys()) {
    grants_.push_back(std::move(grants));
    set_requests({&request_, 1});
    sent = Clock::now();
    // Sent again on another connection (after a failover, to the new master) it would count
    // that server's replicas, not the ones the grants needed: their outcome is unknown instead.
    bound_to_connection = true;
  }

  // A later WAIT for as many replicas joins this one while it waits to be written: its grants
  // have run (their replies came), so this WAIT, written after them, covers them too. One WAIT
  // then answers every grant of a read, rather than one WAIT each, each holding up the
  // connection for a round trip to the replicas.
  bool absorb(Operation& later) override {
    auto* wait = dynamic_cast<WaitForReplicas*>(&later);
    if (wait == nullptr || wait->replicas_ != replicas_ || wait->timeout_ != timeout_)
      return false;
    for (HeldGrants& grants : wait->grants_)
      grants_.push_back(std::move(grants));
    wait->grants_.clear();
    return true;
  }

  void on_reply(std::size_t, Reply&& reply) override { acks_ = std::move(reply); }
  void complete(Transport& core, std::error_code error, std::string detail) override {
    if (error) {
      // Unknown: the grants happened, their replication is not known.
      for (HeldGrants& grants : grants_)
        grants.operation->complete(core, error, detail);
      return;
    }
    std::string why;
    if (acks_.type != Reply::Type::integer) {
      why = refused_wait(core);
    } else if (acks_.integer < replicas_) {
      why = "NOTREPLICATED only " + std::to_string(acks_.integer) + " of " +
            std::to_string(replicas_) + " replicas acknowledged the lease within " +
            std::to_string(timeout_.count()) + " ms";
    }
    for (HeldGrants& grants : grants_) {
      grants.hand_over(why);
      grants.operation->complete(core, {}, {});
    }
  }

 private:
  // The server answered WAIT with an error (an ACL without it, a replica): say so, and what to
  // change, rather than "too few replicas".
  std::string refused_wait(const Transport& core) const {
    std::string why = "NOTREPLICATED Redis at " + core.url().address() +
                      " refused WAIT, which ClientOptions::replica_acks sends after each acquire "
                      "and extend (" +
                      to_string(acks_) + "); ";
    if (acks_.str.starts_with("NOPERM")) {
      const std::string user = core.url().user.empty() ? "default" : core.url().user;
      why += "allow it to the user '" + user + "' (ACL SETUSER " + user +
             " +wait), or set replica_acks to 0";
    } else {
      why += "set replica_acks to 0 if this server cannot run it";
    }
    return why;
  }

  int replicas_;
  std::chrono::milliseconds timeout_;
  Request request_;
  std::vector<HeldGrants> grants_;
  Reply acks_;
};

// After the first connection: INFO memory, and a warning (through the log hook) when the server
// may evict keys. Lock keys all carry a TTL, so every policy but noeviction can pick them (the
// volatile-* ones too), and an evicted lock is free while its holder still works; allkeys-*
// policies can also evict fence records and Election terms, which then forget their last value.
class EvictionPolicyCheck final : public Operation {
 public:
  explicit EvictionPolicyCheck(std::string address)
      : address_(std::move(address)),
        request_(Request::command({"INFO", "memory"}).without_keys().retry_safe()) {
    set_requests({&request_, 1});
    sent = Clock::now();
  }

  void on_reply(std::size_t, Reply&& reply) override { info_ = std::move(reply); }
  void complete(Transport&, std::error_code error, std::string) override {
    // A server that refuses INFO (an ACL, a managed service) leaves the policy unknown: that is
    // no reason to bother anyone.
    if (error || info_.type != Reply::Type::string)
      return;
    const std::string policy = field("maxmemory_policy");
    if (policy.empty() || policy == "noeviction")
      return;
    const std::string maxmemory = field("maxmemory");
    log(LogLevel::warning,
        "Redis at " + address_ + " has maxmemory-policy " + policy +
            (maxmemory == "0" ? " (no maxmemory set yet)" : " with maxmemory " + maxmemory) +
            ": when memory runs short it may evict lock keys, and an evicted lock is free while "
            "its holder still works; set maxmemory-policy noeviction (full memory then refuses "
            "new leases with an error instead)");
  }

 private:
  // The value of "name:value" in INFO's text.
  std::string field(std::string_view name) const {
    const std::string_view text = info_.str;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = std::min(text.find("\r\n", at), text.size());
      const std::string_view line = text.substr(at, end - at);
      if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':')
        return std::string(line.substr(name.size() + 1));
      at = end + 2;
    }
    return {};
  }

  std::string address_;
  Request request_;
  Reply info_;
};

class ReplicaAcknowledged final : public Operation {
 public:
  ReplicaAcknowledged(std::unique_ptr<Operation> inner, int replicas,
                      std::chrono::milliseconds timeout, bool every_replica)
      : every_replica_(every_replica) {
    grants_.operation = std::move(inner);
    grants_.replicas = replicas;
    grants_.timeout = timeout;
    set_requests(grants_.operation->requests());
    sent = grants_.operation->sent;
    deadline = grants_.operation->deadline;
    id = grants_.operation->id;  // cancellable until its replies came (not during the WAIT)
    grants_.replies.resize(requests().size());
  }

  void on_reply(std::size_t index, Reply&& reply) override {
    if (requests()[index].is_lease_grant() && !reply.is_error()) {
      grants_.replies[index] = std::move(reply);
      return;
    }
    grants_.operation->on_reply(index, std::move(reply));
  }

  void complete(Transport& core, std::error_code error, std::string detail) override {
    grants_.operation->handed_out = handed_out;
    bool granted = false;
    for (const auto& reply : grants_.replies)
      granted = granted || reply.has_value();
    if (error || !granted) {
      if (!error)
        grants_.hand_over({});
      grants_.operation->complete(core, error, std::move(detail));
      return;
    }
    if (every_replica_) {
      const std::optional<int> known = core.replicas_known();
      if (!known && grants_.replicas == 0) {
        grants_.hand_over("NOTREPLICATED safe_failover: the number of replicas of " +
                          core.url().address() +
                          " is not known (the sentinels did not list them); set replica_acks");
        grants_.operation->complete(core, {}, {});
        return;
      }
      grants_.replicas = std::max(grants_.replicas, known.value_or(0));
      if (grants_.replicas == 0) {  // no replica a failover could promote
        grants_.hand_over({});
        grants_.operation->complete(core, {}, {});
        return;
      }
    }
    // This operation ends when complete() returns: the WAIT takes over what it holds.
    core.submit(std::make_unique<WaitForReplicas>(std::move(grants_)));
  }

 private:
  HeldGrants grants_;
  bool every_replica_;
};

}  // namespace

std::unique_ptr<Operation> resend_as_eval(std::unique_ptr<Operation> original,
                                          const std::function<Request(const Request&)>& as_eval) {
  return std::make_unique<EvalFallback>(std::move(original), as_eval);
}

bool grants_leases(const Operation& operation) {
  for (const Request& request : operation.requests())
    if (request.is_lease_grant())
      return true;
  return false;
}

std::unique_ptr<Operation> with_replica_acks(std::unique_ptr<Operation> operation, int replicas,
                                             std::chrono::milliseconds timeout,
                                             bool every_replica) {
  return std::make_unique<ReplicaAcknowledged>(std::move(operation), replicas, timeout,
                                               every_replica);
}

std::unique_ptr<Operation> eviction_policy_check(std::string address) {
  return std::make_unique<EvictionPolicyCheck>(std::move(address));
}

}  // namespace leasehold::detail
