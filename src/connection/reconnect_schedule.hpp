// When a connection's run loop connects again, and whether it still may: the decisions of
// reconnecting without the I/O, as Pipeline and Handshake are a connection's calls and setup
// without it. The loop tells it what happened — a connection made, a connection lost, an attempt
// that failed — and does what it answers.
//
// Delays: the first wait after a connection was made is `delay_min`; each wait after that
// doubles it, capped at `delay_max`, less up to 25% of jitter so that many clients do not
// reconnect in lockstep. A fatal failure (the server refused the credentials, the database or
// TLS) ends the loop. The one-time checks (the eviction policy's) run after the first connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

#include "failure.hpp"

namespace leasehold::detail {

class ReconnectSchedule {
 public:
  // `seed`: the jitter's (a random device's in a client, a fixed one in tests).
  ReconnectSchedule(std::chrono::milliseconds delay_min, std::chrono::milliseconds delay_max,
                    std::uint32_t seed);

  // A connection was made. True the first time: the one-time checks run then.
  bool on_connected();
  // The connection was lost: how long to wait before connecting again.
  std::chrono::milliseconds on_lost();
  // An attempt to connect failed: how long to wait before the next one, or nothing when the
  // failure is fatal (the loop ends).
  std::optional<std::chrono::milliseconds> on_attempt_failed(const Failure& failure);

 private:
  // The wait now, and the next one grown from it.
  std::chrono::milliseconds take_delay();

  std::chrono::milliseconds delay_min_;
  std::chrono::milliseconds delay_max_;
  std::chrono::milliseconds delay_;
  bool connected_before_ = false;
  std::minstd_rand jitter_;
};

}  // namespace leasehold::detail
