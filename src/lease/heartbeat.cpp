#include <algorithm>
#include <asio/post.hpp>

#include "leasehold/while_held.hpp"

namespace leasehold::detail {
namespace {

// How soon to retry an extension that failed with a Redis error: often enough to get several
// tries in before the deadline, rarely enough not to hammer a struggling server.
Clock::duration retry_delay(std::chrono::milliseconds ttl) {
  return std::clamp<Clock::duration>(ttl / 10, std::chrono::milliseconds(5),
                                     std::chrono::milliseconds(250));
}

}  // namespace

void throw_lease_lost(std::error_code cause) {
  throw Error(make_error_code(errc::lease_lost),
              cause ? "the lease could not be extended before its deadline: " + cause.message()
                    : std::string("the lease expired or was taken over"));
}

Heartbeat::Heartbeat(Client& client, std::shared_ptr<LeaseState> lease, LostCallback on_lost)
    : client_(client),
      lease_(std::move(lease)),
      on_lost_(std::move(on_lost)),
      tick_(client.get_executor()),
      deadline_timer_(client.get_executor()) {}

std::shared_ptr<Heartbeat> Heartbeat::start(Client& client, std::shared_ptr<LeaseState> lease,
                                            LostCallback on_lost) {
  auto heartbeat = std::make_shared<Heartbeat>(client, std::move(lease), std::move(on_lost));
  asio::post(client.get_executor(), [heartbeat] { heartbeat->begin(); });
  return heartbeat;
}

void Heartbeat::stop() {
  asio::post(tick_.get_executor(), [self = shared_from_this()] {
    self->finished_ = true;
    self->tick_.cancel();
    self->deadline_timer_.cancel();
  });
}

void Heartbeat::begin() {
  if (finished_)
    return;
  arm_deadline();
  schedule_extend(next_extension(lease_->deadline(), lease_->ttl));
}

void Heartbeat::schedule_extend(Clock::time_point at) {
  tick_.expires_at(at);
  tick_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (!ec && !self->finished_)
      self->extend();
  });
}

void Heartbeat::extend() {
  client_.async_process(
      ExtendLock<void>(lease_),
      [self = shared_from_this()](std::error_code ec, bool held) { self->on_extended(ec, held); });
}

void Heartbeat::on_extended(std::error_code ec, bool held) {
  if (finished_)
    return;
  if (ec == errc::closed || ec == errc::auth_failed || ec == errc::select_failed) {
    // The client will never answer again: waiting for the deadline would only keep its thread.
    last_error_ = ec;
    declare_lost();
    return;
  }
  if (ec) {
    // Uncertain: the lease may still be ours. Retry until the deadline timer says otherwise.
    last_error_ = ec;
    schedule_extend(Clock::now() + retry_delay(lease_->ttl));
    return;
  }
  if (!held) {
    last_error_ = {};  // expired or taken over: the cause is not an error
    declare_lost();
    return;
  }
  last_error_ = {};
  arm_deadline();
  schedule_extend(next_extension(lease_->deadline(), lease_->ttl));
}

void Heartbeat::arm_deadline() {
  deadline_timer_.expires_at(lease_->deadline());
  deadline_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (ec || self->finished_)
      return;
    if (Clock::now() < self->lease_->deadline()) {
      self->arm_deadline();  // an extension moved it meanwhile
      return;
    }
    self->declare_lost();
  });
}

void Heartbeat::declare_lost() {
  finished_ = true;
  tick_.cancel();
  deadline_timer_.cancel();
  LostCallback on_lost = std::move(on_lost_);
  if (on_lost)
    on_lost(last_error_);
}

}  // namespace leasehold::detail
