// A thread that takes the signals leasehold passes on (SIGINT, SIGTERM, SIGHUP: blocked in every
// thread by block_forwarded_signals()) while the main thread is busy waiting on the library, and
// gives each to a callback.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace leasehold::cli {

class SignalThread {
 public:
  // `on_signal` is called on the thread, with each signal's number, until destruction.
  explicit SignalThread(std::function<void(int)> on_signal);
  // Stops taking signals (a signal sent after it stays pending, for the caller's own loop).
  ~SignalThread();
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;

 private:
  std::atomic<bool> running_{true};
  std::thread thread_;
};

}  // namespace leasehold::cli
