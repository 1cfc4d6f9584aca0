// run_elector: a replica that stands for leader of a name, leads while elected, and stands again.
//
//   const leasehold::Election<std::string> schedulers{"scheduler", 10s};
//   std::stop_source shutdown;                      // requested at SIGTERM, say
//   leasehold::ElectorOptions options;
//   options.value = "10.0.0.7:8080";                // what leader() shows in its terms
//   leasehold::run_elector(redis, schedulers, std::string("eu"),
//       [&](const leasehold::Term<std::string>& term, std::stop_token stop) {
//         run_scheduler(term.number, stop);         // lead until `stop`; return to resign
//       },
//       options, shutdown.get_token());
//
// Each round campaigns (waits in turn, as long as it takes), then calls the work on this thread
// with the term: a fencing number strictly increasing per name, and the leader's token (to
// proclaim() another value). A KeepAlive extends the lease meanwhile. The work's stop token is
// requested when the leadership ends without it: at the moment the lease is reported lost (an
// extension found it gone, or could not reach Redis before the lease's deadline — by this
// process's own steady clock, before Redis can expire it), or when `stop` is requested. The work
// must then stop acting as the leader and return: it is no longer one. When the work returns,
// the elector resigns (unless the lease was lost), tells `deposed`, and — with `rejoin`, unless
// `stop` was requested — campaigns again, for a new and larger term. Work that throws is resigned
// for, and its exception leaves run_elector. With `leader_changed`, it is told who leads each
// time that changes (this elector among others). See docs/election.md.
//
// async_run_elector is the same as an awaitable, for a program that runs on an io_context: the
// work is a coroutine, asio::awaitable<void>(const Term<N>&, std::stop_token), cancelled (at its
// next cancellable co_await) when its lease is lost or the elector is stopped.
//
//   co_await leasehold::async_run_elector(redis, schedulers, std::string("eu"),
//       [&](const leasehold::Term<std::string>& term, std::stop_token) -> asio::awaitable<void> {
//         co_await run_scheduler(term.number);      // lead until cancelled; return to resign
//       },
//       options, shutdown.get_token());
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <asio/awaitable.hpp>
#include <asio/error.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <exception>
#include <memory>

#include "leasehold/client.hpp"
#include "leasehold/detail/race.hpp"
#include "leasehold/election.hpp"
#include "leasehold/error.hpp"
#include "leasehold/keep_alive.hpp"
#include "leasehold/turn.hpp"
#include "leasehold/wait.hpp"
#include "leasehold/watch.hpp"

namespace leasehold {

// One leadership, as its work gets it.
template <LockNameType N>
struct Term {
  std::uint64_t number;                  // the term: a fencing number, strictly increasing per name
  const LockToken<Election<N>>& leader;  // the leader's lease: proclaim() with it
};

// What leads a term: called with the term and a stop token, on the elector's thread.
template <class F, class N>
concept TermWork = requires(F& work, const Term<N>& term, std::stop_token stop) {
  work(term, stop);
};

// How a term ended.
enum class TermEnd {
  resigned,  // the work returned by itself, and the elector resigned
  lost,      // the lease was lost (it ran out, was taken over or forced): the work was stopped
  stopped,   // the elector's stop was requested: the work was stopped, and the elector resigned
};

struct Deposed {
  std::uint64_t term;
  TermEnd how;
  // Lost: the Redis error that kept the lease from being extended (empty when it ran out or was
  // taken over). Resigned or stopped: the error of a resign that failed until the lease's
  // deadline (it then ran out by itself), else empty.
  std::error_code cause;
};

struct ElectorOptions {
  // Campaign again after a term ends (unless the elector's stop was requested).
  bool rejoin = true;
  // Proclaimed as the leader's value at the start of each term (Election::proclaim()).
  std::optional<std::string> value;
  // How the campaign waits in turn (turn.hpp).
  WaitOptions waiting;
  // Told after each term, on the elector's thread, before it campaigns again.
  std::function<void(const Deposed&)> deposed;
  // Told who leads the name (this elector or another; none when nobody does) when run_elector
  // starts and each time that changes, until it returns (a Watch, watch.hpp): on the client's
  // I/O thread, so quick and without waiting on the client. Unset: nothing is watched.
  std::function<void(const std::optional<Leader>&)> leader_changed;
  // How that watch paces itself.
  WatchOptions watching;
};

namespace detail {

// With `leader_changed` set: a watch of who leads `name` that tells it, in `leaders`.
template <LockNameType N>
void watch_leaders(std::optional<Watch<std::optional<Leader>>>& leaders, Client& client,
                   const Election<N>& election, const N& name, const ElectorOptions& options) {
  if (!options.leader_changed)
    return;
  leaders.emplace(
      client, election.observe(name),
      [&told = options.leader_changed](std::error_code error, const std::optional<Leader>& now) {
        if (!error)  // a watch that failed tells no more; the campaign reports the failure
          told(now);
      },
      options.watching);
}

// Runs `query` for `leader` until it gets through or the leader's lease's deadline passes, trying
// again every `retry` after a transient failure (a query that failed leaves the lease as it was,
// so a later one can still do it): its answer, or the error of the last failure. Any other
// failure throws.
template <class Query, class Token>
std::pair<std::optional<bool>, std::error_code> process_while_leading(
    Client& client, const Query& query, const Token& leader, std::chrono::milliseconds retry) {
  std::error_code last;
  while (!leader.expired()) {
    try {
      return {client.process(query), {}};
    } catch (const Error& e) {
      if (e.code() != condition::transient)
        throw;
      last = e.code();
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(retry, leader.valid_for()));
  }
  return {std::nullopt, last};
}

// Resigns `leader` (see process_while_leading): empty, or the error of a resign that never got
// through before the lease's deadline (it then ran out by itself).
template <class Token>
std::error_code resign(Client& client, const Token& leader, std::chrono::milliseconds retry) {
  try {
    return process_while_leading(client, leader.release(), leader, retry).second;
  } catch (const Error& e) {
    return e.code();
  }
}

// Leads one term with `leader`: proclaims, keeps the lease, runs `lead`, and resigns. A term
// whose value cannot be proclaimed (the lease was lost first) ends without `lead`.
template <LockNameType N, class Lead>
Deposed lead_one_term(Client& client, const Election<N>& election,
                      const LockToken<Election<N>>& leader, Lead& lead,
                      const ElectorOptions& options, const std::stop_token& stop) {
  const Term<N> term{*leader.fence(), leader};
  const auto retry = options.waiting.recheck_unwatched;
  KeepAlive keep_alive(client, leader);
  std::stop_source work_stop;
  const std::stop_callback on_stop(stop, [&] { work_stop.request_stop(); });
  const std::stop_callback on_loss(keep_alive.stop_token(), [&] { work_stop.request_stop(); });
  try {
    if (options.value) {
      const auto [proclaimed, error] =
          process_while_leading(client, election.proclaim(leader, *options.value), leader, retry);
      if (!proclaimed.value_or(false))
        return Deposed{term.number, TermEnd::lost, error};
    }
    // A term whose lease ran out before its work could start (this process stalled) has none.
    if (!work_stop.stop_requested() && !leader.expired())
      lead(term, work_stop.get_token());
  } catch (...) {
    keep_alive.stop();
    resign(client, leader, retry);
    throw;
  }
  keep_alive.stop();
  if (keep_alive.lost() || !keep_alive.held())
    return Deposed{term.number, TermEnd::lost, keep_alive.cause()};
  const TermEnd how = stop.stop_requested() ? TermEnd::stopped : TermEnd::resigned;
  return Deposed{term.number, how, resign(client, leader, retry)};
}

}  // namespace detail

// Campaigns for `name` and leads while elected, as described at the top of this file, until
// `stop` is requested (or after one term without `rejoin`). Returns once it neither leads nor
// waits: its place in the queue is given up, and a lease it held is resigned or lost. A campaign
// that fails for a transient reason (Redis down) goes on waiting; any other failure (a refused
// ACL, a key of the wrong type) throws its Error. Not on the client's I/O thread.
template <LockNameType N, TermWork<N> Lead>
void run_elector(Client& client, const Election<N>& election, const N& name, Lead&& lead,
                 const ElectorOptions& options = {}, std::stop_token stop = {}) {
  std::optional<Watch<std::optional<Leader>>> leaders;
  detail::watch_leaders(leaders, client, election, name, options);
  while (!stop.stop_requested()) {
    const std::optional<LockToken<Election<N>>> leader = wait_until(
        client, election.campaign(name), Clock::time_point::max(), options.waiting, stop);
    if (!leader)
      return;
    const Deposed deposed = detail::lead_one_term(client, election, *leader, lead, options, stop);
    if (options.deposed)
      options.deposed(deposed);
    if (!options.rejoin)
      return;
  }
}

// What leads a term in async_run_elector: a coroutine, given the term and a stop token.
template <class F, class N>
concept AsyncTermWork = requires(F& work, const Term<N>& term, std::stop_token stop) {
  { work(term, stop) } -> std::same_as<asio::awaitable<void>>;
};

namespace detail {

// g++ 12 can report -Wmismatched-new-delete for the coroutine frames below, which Asio allocates
// and frees with its own matching operators (a false positive: GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// process_while_leading, awaited: the timer between tries is the caller's executor's.
template <class Query, class Token>
asio::awaitable<std::pair<std::optional<bool>, std::error_code>> async_process_while_leading(
    Client& client, Query query, const Token& leader, std::chrono::milliseconds retry) {
  std::error_code last;
  while (!leader.expired()) {
    Diagnostics diagnostics;
    std::error_code error;
    const bool answer = co_await client.async_process(
        query, diagnostics, asio::redirect_error(asio::use_awaitable, error));
    if (!error)
      co_return std::pair{std::optional<bool>(answer), std::error_code()};
    if (error != condition::transient)
      throw Error(error, diagnostics.message());
    last = error;
    asio::steady_timer pause(co_await asio::this_coro::executor,
                             std::min<Clock::duration>(retry, leader.valid_for()));
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, error));
  }
  co_return std::pair{std::optional<bool>(), last};
}

template <class Token>
asio::awaitable<std::error_code> async_resign(Client& client, const Token& leader,
                                              std::chrono::milliseconds retry) {
  std::error_code failed;
  try {
    const auto outcome =
        co_await async_process_while_leading(client, leader.release(), leader, retry);
    failed = outcome.second;
  } catch (const Error& e) {
    failed = e.code();
  }
  co_return failed;
}

// Whether `thrown` is the operation_aborted a cancelled coroutine ends with.
inline bool is_aborted(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::system_error& e) {
    return e.code() == asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

// A campaign until it wins, `stop` is requested or the caller cancels: the leader's token, or
// none. A campaign won at the moment it was stopped is resigned; cancelled, it rethrows.
template <LockNameType N>
asio::awaitable<std::optional<LockToken<Election<N>>>> async_campaign(
    Client& client, InTurn<LockToken<Election<N>>> campaign, const ElectorOptions& options,
    std::stop_token stop) {
  using Won = std::optional<LockToken<Election<N>>>;
  auto won = std::make_shared<Won>();
  auto wait = [](Client& client, InTurn<LockToken<Election<N>>> campaign, WaitOptions waiting,
                 std::shared_ptr<Won> won) -> asio::awaitable<void> {
    *won = co_await async_wait_until(client, campaign, Clock::time_point::max(), waiting,
                                     asio::use_awaitable);
  };
  std::exception_ptr cancelled;
  try {
    RaceOutcome<void> outcome = co_await race_against_stop(
        stop, wait(client, std::move(campaign), options.waiting, won), [](bool) {},
        AtStop::wait_for_work);
    if (outcome.thrown && !(stop.stop_requested() && is_aborted(outcome.thrown)))
      std::rethrow_exception(outcome.thrown);  // a failure waiting cannot outlast
  } catch (const std::system_error& e) {
    if (e.code() != asio::error::operation_aborted)
      throw;
    cancelled = std::current_exception();
  }
  if (*won && (cancelled || stop.stop_requested())) {
    if (cancelled)  // the resign must not end at once as cancelled too
      co_await asio::this_coro::reset_cancellation_state();
    co_await async_resign(client, **won, options.waiting.recheck_unwatched);
    won->reset();
  }
  if (cancelled)
    std::rethrow_exception(cancelled);
  co_return std::move(*won);
}

// lead_one_term, awaited: the work is cancelled when the lease is lost or the elector stopped,
// and the term ends once it has returned. Cancelled by the caller, it resigns and rethrows.
template <LockNameType N, class Lead>
asio::awaitable<Deposed> async_lead_one_term(Client& client, const Election<N>& election,
                                             const LockToken<Election<N>>& leader, Lead& lead,
                                             const ElectorOptions& options, std::stop_token stop) {
  const Term<N> term{*leader.fence(), leader};
  const auto retry = options.waiting.recheck_unwatched;
  KeepAlive keep_alive(client, leader);
  std::stop_source work_stop;
  const std::stop_callback on_stop(stop, [&] { work_stop.request_stop(); });
  const std::stop_callback on_loss(keep_alive.stop_token(), [&] { work_stop.request_stop(); });
  if (options.value) {
    const auto [proclaimed, error] = co_await async_process_while_leading(
        client, election.proclaim(leader, *options.value), leader, retry);
    if (!proclaimed.value_or(false)) {
      keep_alive.stop();
      co_return Deposed{term.number, TermEnd::lost, error};
    }
  }
  std::exception_ptr thrown;
  bool cancelled = false;
  if (!work_stop.stop_requested() && !leader.expired()) {
    try {
      RaceOutcome<void> outcome = co_await race_against_stop(
          work_stop.get_token(), lead(term, work_stop.get_token()), [](bool) {},
          AtStop::wait_for_work);
      thrown = outcome.thrown;
    } catch (const std::system_error& e) {
      if (e.code() != asio::error::operation_aborted)
        throw;
      cancelled = true;
    }
  }
  keep_alive.stop();
  if (cancelled) {  // the resign must not end at once as cancelled too
    co_await asio::this_coro::reset_cancellation_state();
    co_await async_resign(client, leader, retry);
    throw std::system_error(asio::error::operation_aborted);
  }
  // Work that ended as cancelled after its stop is the term's normal end; anything else it threw
  // leaves, resigned for.
  if (thrown && !(work_stop.stop_requested() && is_aborted(thrown))) {
    co_await async_resign(client, leader, retry);
    std::rethrow_exception(thrown);
  }
  if (keep_alive.lost() || !keep_alive.held())
    co_return Deposed{term.number, TermEnd::lost, keep_alive.cause()};
  const TermEnd how = stop.stop_requested() ? TermEnd::stopped : TermEnd::resigned;
  co_return Deposed{term.number, how, co_await async_resign(client, leader, retry)};
}

}  // namespace detail

// run_elector as an awaitable, on the caller's executor: `lead` is a coroutine, cancelled at its
// next cancellable co_await when the lease is lost or `stop` is requested (its stop token is
// requested then too); the elector resigns when it returns. Cancelling the awaitable itself is
// a stop that ends it with operation_aborted once its campaign has left its place or its term
// has been resigned. `election` is copied; `client` must outlive the awaitable.
template <LockNameType N, AsyncTermWork<N> Lead>
asio::awaitable<void> async_run_elector(Client& client, Election<N> election, N name, Lead lead,
                                        ElectorOptions options = {}, std::stop_token stop = {}) {
  std::optional<Watch<std::optional<Leader>>> leaders;
  detail::watch_leaders(leaders, client, election, name, options);
  while (!stop.stop_requested()) {
    const std::optional<LockToken<Election<N>>> leader =
        co_await detail::async_campaign<N>(client, election.campaign(name), options, stop);
    if (!leader)
      co_return;
    const Deposed deposed =
        co_await detail::async_lead_one_term(client, election, *leader, lead, options, stop);
    if (options.deposed)
      options.deposed(deposed);
    if (!options.rejoin)
      co_return;
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold
