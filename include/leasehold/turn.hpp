// InTurn<Token>: a wait in turn for a lease, as a value. Each kind makes its own (Lock::in_turn(),
// RwLock::read_in_turn() and write_in_turn(), Semaphore::in_turn(), RawLock::in_turn()), and
// wait_until() (wait.hpp) waits for any of them, as WaitOptions say:
//
//   auto token = leasehold::wait_until(redis, jobs.in_turn("import"), deadline);
#pragma once

#include <chrono>
#include <memory>
#include <utility>

namespace leasehold {

namespace detail {
class TurnContract;
struct TurnAccess;
}  // namespace detail

template <class Token>
class InTurn {
 public:
  using token_type = Token;

 private:
  friend struct detail::TurnAccess;
  explicit InTurn(std::shared_ptr<const detail::TurnContract> contract)
      : contract_(std::move(contract)) {}

  std::shared_ptr<const detail::TurnContract> contract_;
};

// How a wait in turn paces itself (wait_until(), wait.hpp).
struct WaitOptions {
  // The longest a waiter goes without trying again; less than ticket_ttl (each try renews the
  // waiter's place).
  std::chrono::milliseconds recheck{1000};
  // How long a waiter that stopped asking (it died) keeps its place, delaying those behind it.
  std::chrono::milliseconds ticket_ttl{2000};
  // A wait on a key other clients' locks share (raw_lock.hpp) is told of no release: it tries
  // again this often instead.
  std::chrono::milliseconds poll{100};
};

}  // namespace leasehold
