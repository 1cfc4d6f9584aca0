#include "signal_thread.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "cli.hpp"

namespace leasehold::cli {

SignalThread::SignalThread(std::function<void(int)> on_signal)
    : thread_([this, on_signal = std::move(on_signal)] {
        const sigset_t forwarded = forwarded_signals();
        while (running_) {
          timespec pace{1, 0};  // a safety net: the destructor wakes it at once
          const int signal = sigtimedwait(&forwarded, nullptr, &pace);
          if (running_ && (signal == SIGINT || signal == SIGTERM || signal == SIGHUP))
            on_signal(signal);
        }
      }) {}

SignalThread::~SignalThread() {
  running_ = false;
  // SIGCHLD is one of the signals it waits for: it wakes, and ends.
  pthread_kill(thread_.native_handle(), SIGCHLD);
  thread_.join();
}

}  // namespace leasehold::cli
