#include "leasehold/lease_guard.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>

#include "leasehold/client.hpp"
#include "leasehold/observer.hpp"
#include "leasehold/with_lock.hpp"

namespace leasehold {
namespace detail {

// What a guard shares with its Locker's registry (which may revoke it from the thread that shuts
// the locker down) and with the keep-alive's loss report (from the client's I/O thread).
struct GuardState {
  struct RequestStop {
    std::stop_source* stop;
    void operator()() const noexcept { stop->request_stop(); }
  };

  void revoke() noexcept {
    revoked = true;     // before the stop: whoever the stop wakes sees why
    keep_alive.stop();  // nothing extends a lease the locker is giving back
    stop.request_stop();
  }

  KeepAlive keep_alive;
  std::stop_source stop;  // requested at the loss or the revocation
  std::atomic<bool> revoked{false};
  std::optional<std::stop_callback<RequestStop>> forward_loss;
  Locker* locker = nullptr;
  Locker::HeldId held_id = 0;
};

}  // namespace detail

namespace {

// Sends the release of `lease` without waiting for its reply.
void send_release_of(Client& client, const std::shared_ptr<detail::LeaseState>& lease) noexcept {
  try {
    client.async_process(ReleaseLock<void>(lease), [](std::error_code, bool) {});
  } catch (...) {
    // Not reported: the key expires with its TTL.
  }
}

// A release to send, sent by the destructor unless it was awaited.
struct PendingRelease {
  PendingRelease(Client* client, std::shared_ptr<detail::LeaseState> lease)
      : client(client), lease(std::move(lease)) {}
  PendingRelease(PendingRelease&& other) noexcept
      : client(other.client), lease(std::move(other.lease)) {}
  PendingRelease& operator=(PendingRelease&&) = delete;
  ~PendingRelease() {
    if (lease)
      send_release_of(*client, lease);
  }
  Client* client;
  std::shared_ptr<detail::LeaseState> lease;
};

asio::awaitable<void> await_release(PendingRelease pending) {
  if (!pending.lease)
    co_return;
  std::error_code ignored;  // a failed release is not reported: the key expires with its TTL
  // Not cancellable: once sent, the release is waited for.
  co_await pending.client->async_process(
      ReleaseLock<void>(pending.lease),
      asio::bind_cancellation_slot(asio::cancellation_slot(),
                                   asio::redirect_error(asio::use_awaitable, ignored)));
  pending.lease
      .reset();  // sent and answered (a throw before it was sent leaves it to the destructor)
}

}  // namespace

LeaseGuard::LeaseGuard(Client& client, std::shared_ptr<detail::LeaseState> lease,
                       std::chrono::milliseconds max_hold)
    : client_(&client), lease_(std::move(lease)) {
  start(client, nullptr, max_hold);
}

LeaseGuard::LeaseGuard(Locker& locker, std::shared_ptr<detail::LeaseState> lease,
                       std::chrono::milliseconds max_hold)
    : client_(&locker.client()), lease_(std::move(lease)) {
  start(locker.client(), &locker, max_hold);
}

void LeaseGuard::start(Client& client, Locker* locker, std::chrono::milliseconds max_hold) {
  state_ = std::make_shared<detail::GuardState>();
  // Kept alive first: a shutdown may revoke the guard as soon as it is registered.
  state_->keep_alive = KeepAlive(client, lease_, max_hold);
  state_->forward_loss.emplace(state_->keep_alive.stop_token(),
                               detail::GuardState::RequestStop{&state_->stop});
  if (locker == nullptr)
    return;
  const std::weak_ptr<detail::GuardState> weak = state_;
  const std::optional<Locker::HeldId> id = locker->register_held(lease_, [weak] {
    if (const auto state = weak.lock())
      state->revoke();
  });
  if (!id) {
    // The locker shut down while the lease was acquired: it never runs anything; give it back.
    state_->keep_alive.stop();
    send_release_of(client, lease_);
    ended_ = true;
    return;
  }
  state_->locker = locker;
  state_->held_id = *id;
}

LeaseGuard::~LeaseGuard() {
  release();
}

LeaseGuard::LeaseGuard(LeaseGuard&& other) noexcept
    : client_(other.client_),
      lease_(std::move(other.lease_)),
      state_(std::move(other.state_)),
      ended_(other.ended_) {
  other.ended_ = true;
}

LeaseGuard& LeaseGuard::operator=(LeaseGuard&& other) noexcept {
  if (this != &other) {
    release();
    client_ = other.client_;
    lease_ = std::move(other.lease_);
    state_ = std::move(other.state_);
    ended_ = other.ended_;
    other.ended_ = true;
  }
  return *this;
}

LeaseGuard::operator bool() const noexcept {
  return state_ && !ended_;
}

std::optional<std::uint64_t> LeaseGuard::fence() const noexcept {
  if (!lease_ || lease_->fence == 0)
    return std::nullopt;
  return lease_->fence;
}

const KeepAlive& LeaseGuard::keep_alive() const noexcept {
  static const KeepAlive none;
  return state_ ? state_->keep_alive : none;
}

bool LeaseGuard::revoked() const noexcept {
  return state_ && state_->revoked;
}

std::stop_token LeaseGuard::stop_token() const noexcept {
  return state_ ? state_->stop.get_token() : std::stop_token{};
}

bool LeaseGuard::held(Clock::time_point now) const noexcept {
  return state_ && !state_->revoked && state_->keep_alive.held(now);
}

std::shared_ptr<detail::LeaseState> LeaseGuard::end_holding() noexcept {
  if (!state_ || ended_)
    return nullptr;
  ended_ = true;
  state_->keep_alive.stop();
  if (state_->locker != nullptr)
    state_->locker->unregister_held(state_->held_id);
  // Revoked: the locker released it with the others; the moment that release landed, someone
  // else may have taken the lock.
  if (state_->revoked)
    return nullptr;
  return lease_;
}

void LeaseGuard::release() noexcept {
  const std::shared_ptr<detail::LeaseState> lease = end_holding();
  if (!lease)
    return;
  if (client_->running_in_io_thread()) {
    send_release_of(*client_, lease);
    return;
  }
  try {
    std::error_code ignored;
    client_->process(ReleaseLock<void>(lease), ignored);
  } catch (...) {
    // Not reported: the key expires with its TTL.
  }
}

void LeaseGuard::send_release() noexcept {
  if (const std::shared_ptr<detail::LeaseState> lease = end_holding())
    send_release_of(*client_, lease);
}

asio::awaitable<void> LeaseGuard::async_release() {
  // Ended here, at the call: a coroutine cancelled already throws at the co_await, before the
  // awaitable below starts, and the release must go out all the same.
  return await_release(PendingRelease{client_, end_holding()});
}

}  // namespace leasehold
