// Waiting for a lock: acquires that wait until the lock is theirs or a deadline passes, told of
// each release instead of polling, in the order the waiters started (docs/locks.md, "Waiting
// for a lock").
//
//   auto token = leasehold::wait_until(redis, jobs.in_turn("import"), deadline);
//   auto token = leasehold::lock_for(redis, jobs, "import", 30s);   // std::nullopt: not in time
//   auto token = co_await leasehold::async_lock_until(redis, jobs, "import", deadline,
//                                                     asio::use_awaitable);
//
// One waiter serves every kind: each kind's in_turn() supplies its turn contract (its try in
// turn, its reply's meaning, how to leave its queue; detail/turn.hpp), and lock_until(),
// read_until(), write_until() and acquire_until() are wait_until() by another name.
// A waiter takes a place in the name's queue (try_lock_in_turn, queue.hpp) and tries again when
// a release names it the head of the queue (a message on a sharded pub/sub channel in the lock's
// slot, carried by the client's one subscriber connection per server), when the holder's lease
// runs out (a holder that crashed tells no one), when the waiter ahead of it may have died (its
// ticket runs out), and at least every `recheck` (a lost message costs at most that). The first
// try is at once, and one is made at the deadline before giving up. Stopping (a stop token, or
// cancelling the async form) and giving up leave the queue at once.
#pragma once

#include <asio/associated_cancellation_slot.hpp>
#include <asio/async_result.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "leasehold/client.hpp"
#include "leasehold/detail/wait.hpp"
#include "leasehold/error.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/queue.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"
#include "leasehold/turn.hpp"

namespace leasehold {

// Waits in turn for the lease `turn` is for (a kind's in_turn(): Lock::in_turn(),
// RwLock::read_in_turn(), Semaphore::in_turn(), ...) until `deadline`
// (Clock::time_point::max(): as long as it takes): the token, or std::nullopt when the deadline
// passed or `stop` was requested. A try that fails for a transient reason (Redis down or
// restarting, condition::transient) is made again at the recheck, and the wait throws its Error
// only if tries still fail at the deadline; any other failure (a refused ACL, a key of the wrong
// type) throws at once. Not on the client's I/O thread.
template <class Token>
std::optional<Token> wait_until(Client& client, const InTurn<Token>& turn,
                                Clock::time_point deadline, WaitOptions options = {},
                                std::stop_token stop = {}) {
  return detail::wait_until_as("wait_until", client, turn, deadline, options, std::move(stop));
}

template <class Token, class Rep, class Period>
std::optional<Token> wait_for(Client& client, const InTurn<Token>& turn,
                              std::chrono::duration<Rep, Period> timeout, WaitOptions options = {},
                              std::stop_token stop = {}) {
  return wait_until(client, turn,
                    Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout), options,
                    std::move(stop));
}

// The async form; completion signature void(std::error_code, std::optional<Token>). Cancelling
// it (its handler's cancellation slot, any type) ends it with operation_aborted.
template <class Token, class CompletionToken>
auto async_wait_until(Client& client, const InTurn<Token>& turn, Clock::time_point deadline,
                      WaitOptions options, CompletionToken&& token) {
  detail::validate(options);
  return detail::async_wait_in_turn<Token>(
      client, detail::TurnWait{detail::TurnAccess::contract(turn), deadline, options}, {},
      std::forward<CompletionToken>(token));
}

template <class Token, class CompletionToken>
auto async_wait_until(Client& client, const InTurn<Token>& turn, Clock::time_point deadline,
                      CompletionToken&& token) {
  return async_wait_until(client, turn, deadline, WaitOptions{},
                          std::forward<CompletionToken>(token));
}

// The kinds' own names for wait_until(): lock_until(redis, lock, name, ...) is
// wait_until(redis, lock.in_turn(name), ...), and so on.

template <LockNameType N>
std::optional<LockToken<Lock<N>>> lock_until(Client& client, const Lock<N>& lock, const N& name,
                                             Clock::time_point deadline, WaitOptions options = {},
                                             std::stop_token stop = {}) {
  return detail::wait_until_as("lock_until", client, lock.in_turn(name), deadline, options,
                               std::move(stop));
}

template <LockNameType N, class Rep, class Period>
std::optional<LockToken<Lock<N>>> lock_for(Client& client, const Lock<N>& lock, const N& name,
                                           std::chrono::duration<Rep, Period> timeout,
                                           WaitOptions options = {}, std::stop_token stop = {}) {
  return lock_until(client, lock, name,
                    Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout), options,
                    stop);
}

template <LockNameType N, class Token>
auto async_lock_until(Client& client, const Lock<N>& lock, const N& name,
                      Clock::time_point deadline, WaitOptions options, Token&& token) {
  return async_wait_until(client, lock.in_turn(name), deadline, options,
                          std::forward<Token>(token));
}

template <LockNameType N, class Token>
auto async_lock_until(Client& client, const Lock<N>& lock, const N& name,
                      Clock::time_point deadline, Token&& token) {
  return async_lock_until(client, lock, name, deadline, WaitOptions{}, std::forward<Token>(token));
}

// RwLock: readers queued together (no writer between them) get in together; a writer waits for
// the readers ahead of it to end.
template <LockNameType N>
std::optional<ReadToken<RwLock<N>>> read_until(Client& client, const RwLock<N>& lock, const N& name,
                                               Clock::time_point deadline, WaitOptions options = {},
                                               std::stop_token stop = {}) {
  return detail::wait_until_as("read_until", client, lock.read_in_turn(name), deadline, options,
                               std::move(stop));
}

template <LockNameType N>
std::optional<LockToken<RwLock<N>>> write_until(Client& client, const RwLock<N>& lock,
                                                const N& name, Clock::time_point deadline,
                                                WaitOptions options = {},
                                                std::stop_token stop = {}) {
  return detail::wait_until_as("write_until", client, lock.write_in_turn(name), deadline, options,
                               std::move(stop));
}

template <LockNameType N, class Token>
auto async_read_until(Client& client, const RwLock<N>& lock, const N& name,
                      Clock::time_point deadline, WaitOptions options, Token&& token) {
  return async_wait_until(client, lock.read_in_turn(name), deadline, options,
                          std::forward<Token>(token));
}

template <LockNameType N, class Token>
auto async_write_until(Client& client, const RwLock<N>& lock, const N& name,
                       Clock::time_point deadline, WaitOptions options, Token&& token) {
  return async_wait_until(client, lock.write_in_turn(name), deadline, options,
                          std::forward<Token>(token));
}

// Semaphore: the first waiters get the free permits, in the order they started.
template <LockNameType N>
std::optional<PermitToken<Semaphore<N>>> acquire_until(Client& client,
                                                       const Semaphore<N>& semaphore, const N& name,
                                                       Clock::time_point deadline,
                                                       WaitOptions options = {},
                                                       std::stop_token stop = {}) {
  return detail::wait_until_as("acquire_until", client, semaphore.in_turn(name), deadline, options,
                               std::move(stop));
}

template <LockNameType N, class Rep, class Period>
std::optional<PermitToken<Semaphore<N>>> acquire_for(Client& client, const Semaphore<N>& semaphore,
                                                     const N& name,
                                                     std::chrono::duration<Rep, Period> timeout,
                                                     WaitOptions options = {},
                                                     std::stop_token stop = {}) {
  return acquire_until(client, semaphore, name,
                       Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout), options,
                       stop);
}

template <LockNameType N, class Token>
auto async_acquire_until(Client& client, const Semaphore<N>& semaphore, const N& name,
                         Clock::time_point deadline, WaitOptions options, Token&& token) {
  return async_wait_until(client, semaphore.in_turn(name), deadline, options,
                          std::forward<Token>(token));
}

}  // namespace leasehold
