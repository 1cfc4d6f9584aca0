// InTurn<Token>: a wait in turn for a lease, as a value. Each kind makes its own (Lock::in_turn(),
// RwLock::read_in_turn() and write_in_turn(), Semaphore::in_turn(), RawLock::in_turn()), and
// wait_until() (wait.hpp) waits for any of them:
//
//   auto token = leasehold::wait_until(redis, jobs.in_turn("import"), deadline);
#pragma once

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

namespace detail {

// Only the kinds make an InTurn, and only the waiter reads its contract.
struct TurnAccess {
  template <class Token>
  static InTurn<Token> make(std::shared_ptr<const TurnContract> contract) {
    return InTurn<Token>(std::move(contract));
  }
  template <class Token>
  static const std::shared_ptr<const TurnContract>& contract(const InTurn<Token>& turn) {
    return turn.contract_;
  }
};

}  // namespace detail
}  // namespace leasehold
