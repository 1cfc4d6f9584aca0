// The reply adapters: each kind's queries turning a server's Reply into their outcome. The input
// is RESP (read by the connection's reader); every reply it holds goes to every adapter, once
// with a reply in time and once with one after the lease's deadline.
//
// Adapters: Lock (plain and fenced) try_lock, a token's release and extend, force_release,
// try_lock_in_turn, leave_queue; a fenced LockSet's try and its token's release and extend (names
// of three slots); RwLock try_read, try_write (fenced too), release_by_id; Semaphore
// try_acquire (fenced too); RawLock try_lock; Election leader (who leads, with the holder's
// identity read back from Redis); an observer's look and renewal, and a string reply read as an
// announcement on a name's change channel (anyone may publish there); every kind's try in turn (the
// turn contract the waiter uses), and the wait schedule fed with where a refused waiter stands;
// Command.
//
// Checks:
//   - an error reply is a failed outcome whose code is classify_error_reply()'s;
//   - a failed outcome carries an error code;
//   - a reply after the lease's deadline grants no token;
//   - 1/0 replies (release, extend, leave, by id) are true exactly for the integer 1; a lease on
//     names of several slots also for an array of 1s (its parts' replies on a cluster);
//   - a granted token's value is the query's, and a fenced grant's fence is the reply's number;
//   - the wait schedule's next try is after `now` (or at the deadline), no later than
//     `now + recheck`, never after the deadline.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "leasehold/election.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/lock_set.hpp"
#include "leasehold/query.hpp"
#include "leasehold/queue.hpp"
#include "leasehold/raw_lock.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"
#include "wait_schedule.hpp"

namespace {

using leasehold::fuzz::check_failure;

using namespace std::chrono_literals;
using leasehold::Clock;
using leasehold::Reply;
using leasehold::Result;
using leasehold::Timing;

const leasehold::Lock<std::string> kLock{"fuzz", 30s};
const leasehold::RwLock<std::string> kRwLock{"fuzz", 30s};
const leasehold::Semaphore<std::string> kSemaphore{"fuzz", 3, 30s};
const leasehold::RawLock kRawLock{30s};
const leasehold::Election<std::string> kElection{"fuzz", 30s};

void check_one_or_zero(const Reply& reply, const Result<bool>& result) {
  check_failure(reply, result);
  if (result)
    LEASEHOLD_FUZZ_CHECK(*result == (reply.type == Reply::Type::integer && reply.integer == 1));
  else if (!reply.is_error())
    LEASEHOLD_FUZZ_CHECK(reply.type != Reply::Type::integer);
}

// A release or extend of a lease on names of three slots: true only when the one script, or each
// of the three parts, answered 1.
void check_every_part(const Reply& reply, const Result<bool>& result) {
  check_failure(reply, result);
  if (!result || !*result)
    return;
  const auto one = [](const Reply& part) {
    return part.type == Reply::Type::integer && part.integer == 1;
  };
  LEASEHOLD_FUZZ_CHECK(
      one(reply) || (reply.type == Reply::Type::array && reply.elements.size() == 3 &&
                     std::all_of(reply.elements.begin(), reply.elements.end(), one)),
      leasehold::to_string(reply));
}

// An acquire's outcome, std::optional<Token>: a token only in time, with the query's value.
template <class Query>
void check_acquire(const Query& query, const std::string& value, const Reply& reply,
                   const Timing& timing, bool late, std::optional<long long> fence_reply) {
  const auto result = query.parse(reply, timing);
  check_failure(reply, result);
  if (!result || !*result)
    return;
  LEASEHOLD_FUZZ_CHECK(!late, leasehold::to_string(reply));
  LEASEHOLD_FUZZ_CHECK((*result)->value() == value);
  LEASEHOLD_FUZZ_CHECK((*result)->id().hex() == value.substr(0, 32));
  if (fence_reply)
    LEASEHOLD_FUZZ_CHECK((*result)->fence() == std::optional<std::uint64_t>(*fence_reply));
}

void check_schedule(const leasehold::detail::TurnSeen& seen, Clock::time_point now) {
  for (const auto recheck : {1ms, 100ms, 1000ms}) {
    const Clock::time_point deadline = now + 10s;
    const Clock::time_point at = leasehold::detail::next_turn_try(seen, now, recheck, deadline);
    LEASEHOLD_FUZZ_CHECK(at > now && at <= now + recheck && at <= deadline,
                         std::to_string(seen.holder_ttl.count()) + " " +
                             std::to_string(seen.position) + " " +
                             std::to_string(seen.head_ticket_ttl.count()));
  }
}

template <class Token>
void check_turn(const leasehold::InTurn<Token>& turn, const leasehold::detail::Waiter& waiter,
                const Reply& reply, const Timing& timing, bool late) {
  const auto& contract = leasehold::detail::TurnAccess::contract(turn);
  const Result<leasehold::detail::TurnOutcome> outcome = contract->parse_try(reply, timing, waiter);
  check_failure(reply, outcome);
  if (!outcome)
    return;
  if (outcome->state) {
    LEASEHOLD_FUZZ_CHECK(!late, leasehold::to_string(reply));
    LEASEHOLD_FUZZ_CHECK(outcome->state->value == waiter.value ||
                         outcome->state->value == waiter.id.hex());
    return;
  }
  check_schedule(outcome->seen, timing.received);
}

// The queries, made once (each makes an id and a holder identity): parsing leaves a query whole.
struct Queries {
  leasehold::TryLock<leasehold::Lock<std::string>> lock = kLock.try_lock("name");
  leasehold::TryLock<leasehold::Lock<std::string>> fenced_lock =
      kLock.with_fencing().try_lock("name");
  leasehold::LockToken<leasehold::Lock<std::string>> token = granted_token();
  leasehold::ForceRelease<leasehold::Lock<std::string>> force = kLock.force_release("name");
  leasehold::WaitTicket ticket;
  leasehold::TryLockInTurn<leasehold::Lock<std::string>> in_turn =
      leasehold::try_lock_in_turn(kLock, std::string("name"), ticket);
  leasehold::LeaveQueue<leasehold::Lock<std::string>> leave =
      leasehold::leave_queue(kLock, std::string("name"), ticket);
  leasehold::TryRead<leasehold::RwLock<std::string>> read = kRwLock.try_read("name");
  leasehold::TryWrite<leasehold::RwLock<std::string>> write = kRwLock.try_write("name");
  leasehold::TryWrite<leasehold::RwLock<std::string>> fenced_write =
      kRwLock.with_fencing().try_write("name");
  leasehold::LeaseId id = leasehold::LeaseId::generate();
  leasehold::ActById<leasehold::RwLock<std::string>> release_by_id =
      kRwLock.release_by_id("name", id);
  leasehold::ActById<leasehold::RwLock<std::string>> extend_by_id =
      kRwLock.extend_by_id("name", id);
  leasehold::TryAcquire<leasehold::Semaphore<std::string>> acquire = kSemaphore.try_acquire("name");
  leasehold::TryAcquire<leasehold::Semaphore<std::string>> fenced_acquire =
      kSemaphore.with_fencing().try_acquire("name");
  leasehold::TryLock<leasehold::RawLock> raw = kRawLock.try_lock("key");
  leasehold::detail::Waiter waiter = leasehold::detail::waiter_of(ticket);
  leasehold::InTurn<leasehold::LockToken<leasehold::Lock<std::string>>> lock_turn =
      kLock.in_turn("name");
  leasehold::InTurn<leasehold::LockToken<leasehold::Lock<std::string>>> fenced_lock_turn =
      kLock.with_fencing().in_turn("name");
  leasehold::InTurn<leasehold::ReadToken<leasehold::RwLock<std::string>>> read_turn =
      kRwLock.read_in_turn("name");
  leasehold::InTurn<leasehold::LockToken<leasehold::RwLock<std::string>>> write_turn =
      kRwLock.write_in_turn("name");
  leasehold::InTurn<leasehold::LockToken<leasehold::RwLock<std::string>>> fenced_write_turn =
      kRwLock.with_fencing().write_in_turn("name");
  leasehold::InTurn<leasehold::PermitToken<leasehold::Semaphore<std::string>>> permit_turn =
      kSemaphore.in_turn("name");
  leasehold::InTurn<leasehold::LockToken<leasehold::RawLock>> raw_turn = kRawLock.in_turn("key");
  leasehold::detail::LeaderQuery<leasehold::Election<std::string>> leader =
      kElection.leader("name");
  leasehold::InTurn<leasehold::LockToken<leasehold::Election<std::string>>> campaign =
      kElection.campaign("name");
  leasehold::Command command{"GET", "k"};
  leasehold::LockSet<leasehold::Lock<std::string>> set{kLock.with_fencing(), {"a", "b", "c"}};
  leasehold::TryLockSet<leasehold::LockSet<leasehold::Lock<std::string>>> set_try = set.try_lock();
  leasehold::LockToken<leasehold::LockSet<leasehold::Lock<std::string>>> set_token =
      granted_set_token(set);

  // A token, granted by a nil reply in time: what release() and extend() are asked of.
  static leasehold::LockToken<leasehold::Lock<std::string>> granted_token() {
    const Clock::time_point sent{std::chrono::hours(1)};
    auto granted = kLock.try_lock("name").parse(Reply::make_nil(), Timing{sent, sent});
    LEASEHOLD_FUZZ_CHECK(granted && *granted);
    return std::move(**granted);
  }
  // A set token, granted by the one script's reply in time.
  static leasehold::LockToken<leasehold::LockSet<leasehold::Lock<std::string>>> granted_set_token(
      const leasehold::LockSet<leasehold::Lock<std::string>>& set) {
    const Clock::time_point sent{std::chrono::hours(1)};
    const Reply taken = Reply::make_array({Reply::make_integer(1), Reply::make_integer(4),
                                           Reply::make_integer(5), Reply::make_integer(6)});
    auto granted = set.try_lock().parse(taken, Timing{sent, sent});
    LEASEHOLD_FUZZ_CHECK(granted && *granted && (*granted)->fences().size() == 3);
    return std::move(**granted);
  }
};

void check_announcement(std::string_view payload) {
  const auto heard = leasehold::detail::parse_announcement(payload);
  if (!heard)
    return;
  const leasehold::detail::SeenLease& state = heard->state;
  std::string again = std::to_string(heard->version);
  if (!state.lease.empty()) {
    LEASEHOLD_FUZZ_CHECK(state.lease.find_first_of(" \n") == std::string::npos, state.lease);
    again += " " + std::to_string(state.time_left.count()) + " " + std::to_string(state.term) +
             " " + state.lease;
    if (state.proclaimed)
      again += "\n" + *state.proclaimed;
  }
  const auto reread = leasehold::detail::parse_announcement(again);
  LEASEHOLD_FUZZ_CHECK(reread && reread->version == heard->version &&
                           reread->state.same_as(state) &&
                           reread->state.time_left == state.time_left,
                       again);
  (void)leasehold::detail::leader_seen(state);
}

void check_reply(const Queries& q, const Reply& reply, const Timing& timing, bool late) {
  const std::optional<long long> integer =
      reply.type == Reply::Type::integer ? std::optional<long long>(reply.integer) : std::nullopt;

  // Lock.
  check_acquire(q.lock, q.lock.value(), reply, timing, late, std::nullopt);
  {
    // The rvalue parse, which moves the key into a token: on a copy.
    auto moved = q.lock;
    const auto result = std::move(moved).parse(reply, timing);
    check_failure(reply, result);
    if (result && *result)
      LEASEHOLD_FUZZ_CHECK((*result)->value() == q.lock.value() && !late);
  }
  check_acquire(q.fenced_lock, q.fenced_lock.value(), reply, timing, late, integer);
  check_one_or_zero(reply, q.token.release().parse(reply, timing));
  {
    const Result<bool> extended = q.token.extend().parse(reply, timing);
    check_failure(reply, extended);
    if (extended && *extended)
      LEASEHOLD_FUZZ_CHECK(!late && integer == 1);
    const Result<long long> forced = q.force.parse(reply, timing);
    check_failure(reply, forced);
    if (forced)
      LEASEHOLD_FUZZ_CHECK(integer == *forced);
  }
  {
    const auto result = q.in_turn.parse(reply, timing);
    check_failure(reply, result);
    if (result && result->token)
      LEASEHOLD_FUZZ_CHECK(!late && result->token->value() == q.ticket.value());
    check_one_or_zero(reply, q.leave.parse(reply, timing));
  }

  // LockSet: a token only in time, with a fence per name; its release and extend.
  {
    const auto result = q.set_try.parse(reply, timing);
    check_failure(reply, result);
    if (result && *result)
      LEASEHOLD_FUZZ_CHECK(!late && (*result)->fences().size() == 3);
    check_every_part(reply, q.set_token.release().parse(reply, timing));
    const Result<bool> extended = q.set_token.extend().parse(reply, timing);
    check_every_part(reply, extended);
    if (extended && *extended)
      LEASEHOLD_FUZZ_CHECK(!late);
  }

  // RwLock.
  {
    const auto result = q.read.parse(reply, timing);
    check_failure(reply, result);
    if (result && *result)
      LEASEHOLD_FUZZ_CHECK(!late && integer.value_or(0) > 0);
    check_failure(reply, q.write.parse(reply, timing));
    const auto fenced = q.fenced_write.parse(reply, timing);
    check_failure(reply, fenced);
    if (fenced && *fenced)
      LEASEHOLD_FUZZ_CHECK(!late && (*fenced)->fence() == std::optional<std::uint64_t>(*integer));
    check_one_or_zero(reply, q.release_by_id.parse(reply, timing));
    check_one_or_zero(reply, q.extend_by_id.parse(reply, timing));
  }

  // Semaphore.
  {
    const auto result = q.acquire.parse(reply, timing);
    check_failure(reply, result);
    if (result && *result)
      LEASEHOLD_FUZZ_CHECK(!late && integer.value_or(0) > 0);
    const auto fenced = q.fenced_acquire.parse(reply, timing);
    check_failure(reply, fenced);
    if (fenced && *fenced)
      LEASEHOLD_FUZZ_CHECK(!late && (*fenced)->fence() == std::optional<std::uint64_t>(*integer));
  }

  // RawLock.
  check_acquire(q.raw, q.raw.value(), reply, timing, late, std::nullopt);

  // Every kind's try in turn.
  check_turn(q.lock_turn, q.waiter, reply, timing, late);
  check_turn(q.fenced_lock_turn, q.waiter, reply, timing, late);
  check_turn(q.read_turn, q.waiter, reply, timing, late);
  check_turn(q.write_turn, q.waiter, reply, timing, late);
  check_turn(q.fenced_write_turn, q.waiter, reply, timing, late);
  check_turn(q.permit_turn, q.waiter, reply, timing, late);
  check_turn(q.raw_turn, q.waiter, reply, timing, late);
  check_turn(q.campaign, q.waiter, reply, timing, late);

  // Who leads an election: none for nil, a leader whose term is the counter's for a whole reply,
  // a failure for anything else.
  {
    const auto result = q.leader.parse(reply, timing);
    check_failure(reply, result);
    if (result && *result)
      LEASEHOLD_FUZZ_CHECK(reply.type == Reply::Type::array && reply.elements.size() == 4 &&
                           (*result)->term ==
                               static_cast<std::uint64_t>(reply.elements[2].integer));
    if (result && !*result)
      LEASEHOLD_FUZZ_CHECK(reply.is_nil());
  }

  // An observer's look and renewal; a string as an announcement: a state read from one is one a
  // script could have published (it reads back the same), and reads as a leader.
  {
    const auto look = leasehold::detail::parse_look(reply);
    check_failure(reply, look);
    if (look)
      LEASEHOLD_FUZZ_CHECK(reply.elements.size() == 6 &&
                           look->seen.state.lease.empty() == reply.elements[2].is_nil());
    check_failure(reply, leasehold::detail::parse_keep(reply));
    if (reply.type == Reply::Type::string)
      check_announcement(reply.str);
  }

  // Any command: its reply as it is, an error reply as its error.
  {
    const Result<Reply> result = q.command.parse(reply, timing);
    check_failure(reply, result);
    if (result)
      LEASEHOLD_FUZZ_CHECK(*result == reply);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<Reply> replies =
      leasehold::fuzz::read_replies(leasehold::fuzz::as_text(data, size), 16);
  static const Queries queries;
  const Clock::time_point sent{std::chrono::hours(24)};
  for (const Reply& reply : replies) {
    check_reply(queries, reply, Timing{sent, sent + 1ms}, false);
    check_reply(queries, reply, Timing{sent, sent + 1h}, true);
  }
  return 0;
}
