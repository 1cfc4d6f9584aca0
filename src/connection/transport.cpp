#include "transport.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

namespace leasehold::detail {
namespace {

Failure closed_failure() {
  return {make_error_code(errc::closed), "the client was closed"};
}

}  // namespace

std::error_code route_again_error() noexcept {
  class Category final : public std::error_category {
   public:
    const char* name() const noexcept override { return "leasehold.transport"; }
    std::string message(int) const override {
      return "The call is to be routed again: the cluster node it was queued for left the "
             "cluster.";
    }
  };
  // Never destroyed, like leasehold's own categories (error.cpp): an I/O thread may still
  // compare codes while exit() destroys the statics.
  static const Category* const category = new Category;
  return {1, *category};
}

void complete_later(std::shared_ptr<Transport> transport, std::unique_ptr<Operation> operation,
                    std::error_code error, std::string detail) {
  const auto& strand = transport->strand();
  asio::post(strand, [transport = std::move(transport), operation = std::move(operation), error,
                      detail = std::move(detail)]() mutable {
    operation->complete(*transport, error, std::move(detail));
  });
}

TransportBase::TransportBase(ConnectionStrand strand, RedisUrl url, ClientOptions options)
    : url_(std::move(url)), options_(std::move(options)), strand_(std::move(strand)) {}

void TransportBase::submit(std::unique_ptr<Operation> operation) {
  if (operation->deadline == Clock::time_point{})
    operation->deadline = operation->sent + options_.command_timeout;
  operation = prepare(std::move(operation));
  if (strand_.running_in_this_thread()) {
    admit(std::move(operation));
    return;
  }
  // dispatch, not post: a thread that runs the executor enters the strand at once when it is
  // free (a coroutine's first call, a handler outside the strand), so that an idle connection
  // sends the call right away instead of after a trip through the scheduler's queue.
  asio::dispatch(strand_, [self = shared_from_this(), operation = std::move(operation)]() mutable {
    self->admit(std::move(operation));
  });
}

void TransportBase::admit(std::unique_ptr<Operation> operation) {
  if (open() && !operation->requests().empty()) {
    accept(std::move(operation));
    return;
  }
  const Failure failure = fatal_.error ? fatal_ : closed_ ? closed_failure() : Failure{};
  complete_later(shared_from_this(), std::move(operation), failure.error, failure.detail);
}

void TransportBase::when_connected(UniqueFunction<void(std::error_code, std::string)> callback) {
  asio::post(strand_, [self = shared_from_this(), callback = std::move(callback)]() mutable {
    if (self->fatal_.error) {
      callback(self->fatal_.error, self->fatal_.detail);
    } else if (self->closed_) {
      const Failure closed = closed_failure();
      callback(closed.error, closed.detail);
    } else {
      self->connect_waiters_.push_back(std::move(callback));
      if (self->ready())
        self->notify_connect_waiters({});
    }
  });
}

void TransportBase::notify_connect_waiters(const Failure& failure) {
  for (auto& waiter : take_connect_waiters())
    waiter(failure.error, failure.detail);
}

void TransportBase::close() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->closed_)
      return;
    self->closed_ = true;
    self->shut_down(closed_failure());
  });
}

}  // namespace leasehold::detail
