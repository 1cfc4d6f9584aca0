// The calls of one connection, from queued to answered, without any I/O: it takes calls, the
// bytes the socket took, replies and the time, and says what to write and when to be woken. The
// connection's loop (ServerConnection) does the reading, writing and waiting.
//
// Calls queue in `waiting_`, move to `in_flight_` when their bytes are handed out for writing,
// and leave it when their last reply arrives. Every call gets the same timeout, so deadlines grow
// along in_flight_ + waiting_; that order lets one timer expire them from the front. A call that
// expires while in flight stays in in_flight_ (a prefix: `expired_in_flight_`) so that its
// replies, if they come, are matched and dropped; so does one cancelled in flight (anywhere in
// in_flight_: marked `answered`).
//
// A script goes out as EVALSHA once this connection has sent it: the first call of each script
// on a connection goes out as EVAL, which loads it, so that a server that never saw it (a new
// one, a restarted one, the node a slot moved to) answers no call NOSCRIPT.
//
// A script call answered NOSCRIPT (the server lost its scripts: SCRIPT FLUSH) goes back to the
// front of `waiting_` as EVAL, behind the script
// calls answered NOSCRIPT before it: they are sent again in the order they were first sent, once
// every call in flight has been answered (a script call sent after them may still come back
// NOSCRIPT, and its EVAL must go out before anything written after it). A call sent after one
// answered NOSCRIPT may have run all the same (its script was loaded meanwhile): if its declared
// keys share a hash slot with the NOSCRIPT call's, that call is not sent again but fails
// (errc::no_script), so that no call to a name runs after one made later.
#pragma once

#include <asio/cancellation_type.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "failure.hpp"
#include "leasehold/detail/operation.hpp"
#include "redis6_forms.hpp"

namespace leasehold::detail {

// Where a pipeline hands the calls it is done with: each call once, with no error (every reply
// given) or with the error of the whole call. The sink may queue new calls from within.
class PipelineSink {
 public:
  virtual void complete(Operation& operation, std::error_code error, std::string detail) = 0;

 protected:
  ~PipelineSink() = default;
};

// Where a pipeline in subscriber mode hands the replies that answer no call: a server's push
// (a published message, or a subscription it ended itself). take() says whether `reply` is one,
// and takes it if so; `awaited` is the request the oldest call in flight waits a reply to (null
// when none does).
class PushSink {
 public:
  virtual bool take(Reply& reply, const Request* awaited) = 0;

 protected:
  ~PushSink() = default;
};

class Pipeline {
 public:
  using OperationPtr = std::unique_ptr<Operation>;
  // What a cancellation may end: only a call that cannot have run (its bytes never handed out),
  // or also one that may have (in flight, or sent before the connection was lost).
  enum class CancelScope { unsent, even_if_sent };

  // `address` names the server in the messages; `command_timeout` is the calls' timeout.
  Pipeline(PipelineSink& sink, std::string address, std::chrono::milliseconds command_timeout);

  // Queues a call (its deadline set). It is written by the next write().
  void push(OperationPtr operation);
  // Nothing waits, is in flight, or is still to be written.
  bool idle() const noexcept { return in_flight_.empty() && waiting_.empty() && unsent_.empty(); }
  bool connected() const noexcept { return connected_; }

  // Writing. write() moves every waiting call in flight and returns their bytes; empty when
  // nothing may be written now (not connected, nothing waiting, bytes of an earlier write still
  // unsent, or re-sent script calls held back). The caller writes what it can at once and says
  // how much with written(); the rest is unsent() until it says sent_unsent(). The view is valid
  // until the next call on the pipeline.
  std::string_view write();
  void written(std::size_t size);
  std::string_view unsent() const noexcept { return unsent_; }
  void sent_unsent() noexcept { unsent_.clear(); }

  // Reading. A reply is matched to the oldest call in flight, unless the push sink takes it;
  // false if there is none (a reply nobody asked for: the stream cannot be trusted). on_read(at)
  // says bytes came at `at`.
  bool on_reply(Reply&& reply);
  void set_push_sink(PushSink* sink) noexcept { push_sink_ = sink; }
  void on_read(Clock::time_point at) noexcept { read_time_ = at; }
  Clock::time_point read_time() const noexcept { return read_time_; }

  // Cancellation. The call with this id (Operation::id), if it is waiting or in flight and the
  // scope allows, completes now with operation_aborted: a waiting one leaves the queue, one in
  // flight stays there until its replies came (and are dropped). False if nothing was cancelled.
  bool cancel(std::uint64_t id, CancelScope scope);

  // Time. wake_at() is when on_time() has something to do (it only moves earlier between calls
  // to on_time(): a timer armed for it may fire early, for nothing). on_time() fails the calls
  // whose deadline passed, and returns why the connection is to be replaced when the server
  // has sent nothing for silence_limit() since a call that timed out in flight was made.
  Clock::time_point wake_at() const noexcept { return wake_at_; }
  std::optional<Failure> on_time(Clock::time_point now);
  std::chrono::milliseconds silence_limit() const noexcept { return 2 * command_timeout_; }

  // The connection. on_connected(): set up at `now`, calls may be written. on_lost(): the calls
  // that may safely run twice go out again on the next connection, in their order; the others
  // fail with `failure` (they may or may not have run). fail_all(): every call fails. retire():
  // a cluster node left: calls not yet sent, and retry-safe ones in flight, complete with
  // `route_again`; others in flight fail with connection_lost and `detail`.
  // on_connect_failed(): an attempt to connect failed; the calls that wait for a connection and
  // time out say why.
  void on_connected(Clock::time_point now);
  // For the connection made now: whether the server gets the forms of calls that Redis 6 knows
  // (Redis6Forms) instead of the calls as they are. A connection that does not is switched to
  // them by the first SET ... NX ... GET its server refuses as a syntax error (Redis 6 that did
  // not give its version), and that call is sent again as its form: it did not run.
  void use_redis6_forms(bool use) noexcept { use_redis6_forms_ = use; }
  bool uses_redis6_forms() const noexcept { return use_redis6_forms_; }
  void on_connect_failed(const Failure& failure) { last_connect_failure_ = failure.detail; }
  void on_lost(const Failure& failure);
  void fail_all(const Failure& failure);
  void retire(std::error_code route_again, const std::string& detail);

 private:
  void finish(OperationPtr operation);
  // Appends `request` to unsent_: as EVAL when its script is not loaded yet (which loads it), as
  // its Redis 6 form when the server gets those.
  void append(const Request& request);
  bool sent_as_is(const Request& request) const;
  // What is sent in `request`'s place when the server gets Redis 6's forms; nothing otherwise.
  std::optional<Request> redis6_form_of(const Request& request);
  // The script that the call sent for `request` calls (its Redis 6 form's when the server gets
  // those); null for a call that is no script.
  const Script* sent_script(const Request& request);
  bool needs_loading(const Request& request) const noexcept;
  // `done` ran (at least one of its requests was not answered NOSCRIPT, or it was dropped and may
  // have): the calls waiting to be sent again as EVAL that share a hash slot with it are
  // overtaken.
  void mark_overtaken(const Operation& done);
  // Fails the overtaken calls among those waiting to be sent again as EVAL.
  void fail_overtaken();
  void expire_due(Clock::time_point now);
  bool silent_too_long(Clock::time_point now);
  // Fails the waiting calls bound to the connection that was lost (Operation::bound_to_connection).
  void fail_bound_waiting(std::error_code error, const std::string& detail);

  PipelineSink& sink_;
  PushSink* push_sink_ = nullptr;
  const std::string address_;
  const std::chrono::milliseconds command_timeout_;

  std::deque<OperationPtr> waiting_;
  std::deque<OperationPtr> in_flight_;
  std::size_t expired_in_flight_ = 0;
  std::size_t fallbacks_waiting_ = 0;  // at the front of waiting_
  // The scripts sent since the connection was set up (EVAL loaded them), until a NOSCRIPT says
  // the server lost them. Few: the library's scripts.
  std::vector<const Script*> loaded_scripts_;
  // Bytes of calls in in_flight_ that the socket has not taken yet: while it holds any, they are
  // being sent and nothing else may be written. (Its capacity is kept.)
  std::string unsent_;
  // The bytes write() handed out, until written(): in unsent_, or a single request's own.
  std::string_view handed_out_;

  bool connected_ = false;
  bool use_redis6_forms_ = false;
  Redis6Forms redis6_forms_;
  std::string last_connect_failure_;  // since the last connection was made
  Clock::time_point read_time_;
  Clock::time_point wake_at_ = Clock::time_point::max();
  // When the oldest call made since the latest read was made, once it timed out in flight.
  std::optional<Clock::time_point> silent_since_;
};

// Whether the calls queued by the callers that the first `delivered` replies of one read resumed
// are written now, before the rest of the read is parsed: after the first reply (the server
// starts on its caller's next call instead of idling while the client parses the rest), every
// 4 replies up to 16, and every 16 after that (fewer, larger writes when a read holds hundreds).
constexpr bool writes_after_reply(std::size_t delivered) noexcept {
  return delivered == 1 || (delivered <= 16 ? delivered % 4 == 0 : delivered % 16 == 0);
}

// How far an Asio cancellation of `type` may reach: terminal ends even a call that was sent
// (its outcome is then unknown); partial and total only one that cannot have run.
std::optional<Pipeline::CancelScope> cancel_scope(asio::cancellation_type type) noexcept;

}  // namespace leasehold::detail
