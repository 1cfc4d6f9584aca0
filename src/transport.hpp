// What a Client runs its calls on: one connection (ClientCore) or a Redis Cluster (ClusterCore).
// Operations (client.hpp) are handed to submit() and completed on the transport's strand.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/strand.hpp>
#include <memory>
#include <system_error>

#include "leasehold/detail/operation.hpp"
#include "leasehold/detail/unique_function.hpp"
#include "leasehold/options.hpp"
#include "leasehold/url.hpp"

namespace leasehold::detail {

class Transport {
 public:
  virtual ~Transport() = default;

  // These three may be called from any thread.
  virtual void submit(std::unique_ptr<Operation> operation) = 0;
  virtual void when_connected(UniqueFunction<void(std::error_code, std::string)> callback) = 0;
  virtual void close() = 0;

  // The time to count a reply as received at (see connection_now() in client.hpp).
  virtual Clock::time_point now() const noexcept = 0;
  virtual const RedisUrl& url() const noexcept = 0;
  virtual const ClientOptions& options() const noexcept = 0;
  // Where the transport's state lives.
  virtual const ConnectionStrand& strand() const noexcept = 0;
};

// The error with which a retired connection hands back the calls it never sent, and those in
// flight that are retry-safe: a cluster routes them again. It never reaches a caller.
std::error_code route_again_error() noexcept;

// Completes `operation` with `error` through the transport's strand queue, never from within the
// caller's own call: a caller that calls again on failure must not recurse.
void complete_later(std::shared_ptr<Transport> transport, std::unique_ptr<Operation> operation,
                    std::error_code error, std::string detail);

}  // namespace leasehold::detail
