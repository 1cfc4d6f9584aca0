// What a Client runs its calls on: one connection (ClientCore) or a Redis Cluster (ClusterCore).
//
// An Operation is one call: its requests go to Redis together, and its completion gets either an
// error for the whole call or one reply per request.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/strand.hpp>
#include <memory>
#include <system_error>
#include <vector>

#include "leasehold/client.hpp"

namespace leasehold::detail {

struct Operation {
  std::vector<Request> requests;
  std::vector<Reply> replies;
  // When the call fails with command_timeout. Set by submit() from the command timeout unless
  // the submitter set it (a cluster keeps the caller's deadline across redirections).
  Clock::time_point deadline{};
  OperationCompletion complete;

  bool retry_safe() const;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // All three may be called from any thread.
  virtual void submit(std::unique_ptr<Operation> operation) = 0;
  virtual void when_connected(UniqueFunction<void(std::error_code, std::string)> callback) = 0;
  virtual void close() = 0;

  virtual const RedisUrl& url() const noexcept = 0;
  virtual const ClientOptions& options() const noexcept = 0;
  // Where the transport's state lives.
  virtual const asio::strand<asio::any_io_executor>& strand() const noexcept = 0;
};

// The error with which a retired connection hands back the calls it never sent, and those in
// flight that are retry-safe: a cluster routes them again. It never reaches a caller.
std::error_code route_again_error() noexcept;

}  // namespace leasehold::detail
