#include "pipeline.hpp"

#include <algorithm>
#include <asio/error.hpp>
#include <iterator>
#include <utility>

#include "client_operations.hpp"

namespace leasehold::detail {
namespace {

bool is_noscript(const Reply& reply) {
  return reply.is_error() && reply.str.starts_with("NOSCRIPT");
}

// Redis 6's answer to SET with both NX and GET.
bool refuses_nx_with_get(const Reply& reply) {
  return reply.is_error() && reply.str.starts_with("ERR syntax error");
}

// Whether two calls may touch one key, by the keys their requests declare (every script call
// and lease query does; a command that declares none is not counted): a hash slot in common, or
// keys across slots.
bool may_share_a_key(const Operation& a, const Operation& b) {
  using Keys = Request::Keys;
  const auto declared = [](Keys keys) {
    return keys == Keys::one_slot || keys == Keys::cross_slot;
  };
  for (const Request& x : a.requests()) {
    const auto [x_keys, x_slot] = x.keys_and_slot();
    if (!declared(x_keys))
      continue;
    for (const Request& y : b.requests()) {
      const auto [y_keys, y_slot] = y.keys_and_slot();
      if (declared(y_keys) &&
          (x_keys == Keys::cross_slot || y_keys == Keys::cross_slot || x_slot == y_slot))
        return true;
    }
  }
  return false;
}

}  // namespace

Pipeline::Pipeline(PipelineSink& sink, std::string address,
                   std::chrono::milliseconds command_timeout)
    : sink_(sink), address_(std::move(address)), command_timeout_(command_timeout) {}

void Pipeline::push(OperationPtr operation) {
  // A call bound to the connection joins one still waiting to be written, if that one takes it.
  if (operation->bound_to_connection) {
    for (auto it = waiting_.rbegin(); it != waiting_.rend(); ++it)
      if ((*it)->bound_to_connection && !(*it)->handed_out && (*it)->absorb(*operation))
        return;
  }
  wake_at_ = std::min(wake_at_, operation->deadline);
  waiting_.push_back(std::move(operation));
}

std::string_view Pipeline::write() {
  if (!connected_ || !unsent_.empty() || waiting_.empty())
    return {};  // not yet, or the bytes of the last write are still being sent
  if (fallbacks_waiting_ > 0 && !in_flight_.empty())
    return {};  // script calls sent before the re-sent ones may still come back NOSCRIPT
  // A single request is handed out from where it is; several are copied into one buffer (a
  // sequence of buffers is sent at most 16 at a time: asio's limit per write_some).
  if (waiting_.size() == 1 && waiting_.front()->requests().size() == 1 &&
      sent_as_is(waiting_.front()->requests().front())) {
    handed_out_ = waiting_.front()->requests().front().bytes();
  } else {
    for (const OperationPtr& operation : waiting_)
      for (const Request& request : operation->requests())
        append(request);
    handed_out_ = unsent_;
  }
  while (!waiting_.empty()) {
    waiting_.front()->replies_received = 0;
    waiting_.front()->handed_out = true;
    in_flight_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  fallbacks_waiting_ = 0;
  return handed_out_;
}

bool Pipeline::needs_loading(const Request& request) const noexcept {
  return request.is_script() && std::find(loaded_scripts_.begin(), loaded_scripts_.end(),
                                          request.script()) == loaded_scripts_.end();
}

std::optional<Request> Pipeline::redis6_form_of(const Request& request) {
  return use_redis6_forms_ ? redis6_forms_.form_of(request) : std::nullopt;
}

const Script* Pipeline::sent_script(const Request& request) {
  return use_redis6_forms_ ? redis6_forms_.script_of(request) : request.script();
}

bool Pipeline::sent_as_is(const Request& request) const {
  // A server that gets Redis 6's forms has each call looked at by append().
  return !use_redis6_forms_ && !needs_loading(request);
}

void Pipeline::append(const Request& original) {
  const std::optional<Request> form = redis6_form_of(original);
  const Request& request = form ? *form : original;
  if (!needs_loading(request)) {
    unsent_ += request.bytes();
    return;
  }
  unsent_ += request.eval_fallback().bytes();
  loaded_scripts_.push_back(request.script());
}

void Pipeline::written(std::size_t size) {
  if (size == handed_out_.size())
    unsent_.clear();
  else if (handed_out_.data() == unsent_.data())
    unsent_.erase(0, size);
  else
    unsent_.assign(handed_out_.substr(size));
  handed_out_ = {};
}

bool Pipeline::on_reply(Reply&& reply) {
  if (push_sink_ != nullptr &&
      push_sink_->take(reply,
                       in_flight_.empty()
                           ? nullptr
                           : &in_flight_.front()->requests()[in_flight_.front()->replies_received]))
    return true;
  if (in_flight_.empty())
    return false;
  Operation& front = *in_flight_.front();
  const std::size_t index = front.replies_received++;
  // Its caller already got command_timeout, or operation_aborted.
  const bool dropped = front.answered;
  if (!dropped) {
    const Request& request = front.requests()[index];
    if (is_noscript(reply) && sent_script(request) != nullptr) {
      front.noscript_replies.push_back(index);
      loaded_scripts_.clear();  // the server lost them all
    } else if (!use_redis6_forms_ && refuses_nx_with_get(reply) && is_set_nx_px_get(request)) {
      // A server older than Redis 7.0 that did not give its version: from now on it gets Redis
      // 6's forms, and this call, which did not run, goes again as its form's EVAL.
      use_redis6_forms_ = true;
      front.noscript_replies.push_back(index);
    } else {
      front.on_reply(index, std::move(reply));
    }
  }
  if (front.replies_received < front.requests().size())
    return true;
  OperationPtr done = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (expired_in_flight_ > 0)  // it was the first of them
    --expired_in_flight_;
  if (fallbacks_waiting_ > 0 &&
      (dropped || done->noscript_replies.size() < done->requests().size()))
    mark_overtaken(*done);
  if (!dropped)
    finish(std::move(done));
  if (in_flight_.empty() && fallbacks_waiting_ > 0)
    fail_overtaken();  // every call sent after them has answered: which ran is known
  return true;
}

void Pipeline::mark_overtaken(const Operation& done) {
  for (std::size_t i = 0; i < fallbacks_waiting_; ++i)
    if (!waiting_[i]->overtaken && may_share_a_key(*waiting_[i], done))
      waiting_[i]->overtaken = true;
}

void Pipeline::fail_overtaken() {
  for (std::size_t i = 0; i < fallbacks_waiting_;) {
    if (!waiting_[i]->overtaken) {
      ++i;
      continue;
    }
    OperationPtr operation = std::move(waiting_[i]);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    --fallbacks_waiting_;
    sink_.complete(*operation, make_error_code(errc::no_script),
                   "Redis at " + address_ +
                       " no longer had the call's Lua script (NOSCRIPT: a SCRIPT FLUSH, or a "
                       "failover to a server without it), and a call made after it to the same "
                       "key ran first; it was not run again, so that calls to a key run in the "
                       "order they were made");
  }
}

bool Pipeline::cancel(std::uint64_t id, CancelScope scope) {
  const auto named = [id](const OperationPtr& operation) { return operation->id == id; };
  if (const auto it = std::find_if(waiting_.begin(), waiting_.end(), named); it != waiting_.end()) {
    if ((*it)->handed_out && scope == CancelScope::unsent)
      return false;  // sent before the connection was lost: it may have run
    if (static_cast<std::size_t>(it - waiting_.begin()) < fallbacks_waiting_)
      --fallbacks_waiting_;
    OperationPtr operation = std::move(*it);
    waiting_.erase(it);
    sink_.complete(*operation, asio::error::operation_aborted,
                   operation->handed_out
                       ? "the call was cancelled; it had been sent to Redis at " + address_ +
                             " before the connection was lost, and may or may not have run"
                       : "the call was cancelled before it was sent");
    return true;
  }
  if (scope == CancelScope::unsent)
    return false;
  const auto first = in_flight_.begin() + static_cast<std::ptrdiff_t>(expired_in_flight_);
  const auto it = std::find_if(first, in_flight_.end(), named);
  if (it == in_flight_.end() || (*it)->answered)
    return false;
  // Stays in in_flight_ so that its replies, when they come, are matched and dropped.
  (*it)->answered = true;
  sink_.complete(**it, asio::error::operation_aborted,
                 "the call was cancelled after it was sent to Redis at " + address_ +
                     "; it may or may not have run");
  return true;
}

void Pipeline::finish(OperationPtr operation) {
  if (operation->noscript_replies.empty()) {
    sink_.complete(*operation, {}, {});
    return;
  }
  // Sent again ahead of everything queued, behind the script calls re-sent before it: its
  // deadline is older than any queued call's, so the queue keeps deadlines in order.
  for (std::size_t index : operation->noscript_replies)  // their EVAL loads them again
    if (const Script* script = sent_script(operation->requests()[index]);
        std::find(loaded_scripts_.begin(), loaded_scripts_.end(), script) == loaded_scripts_.end())
      loaded_scripts_.push_back(script);
  OperationPtr fallback = resend_as_eval(std::move(operation), [this](const Request& request) {
    const std::optional<Request> form = redis6_form_of(request);
    return form ? form->eval_fallback() : request.eval_fallback();
  });
  wake_at_ = std::min(wake_at_, fallback->deadline);
  waiting_.insert(waiting_.begin() + static_cast<std::ptrdiff_t>(fallbacks_waiting_),
                  std::move(fallback));
  ++fallbacks_waiting_;
}

std::optional<Failure> Pipeline::on_time(Clock::time_point now) {
  expire_due(now);
  std::optional<Failure> silence;
  if (silent_too_long(now)) {
    // A paused server answers late; one that sent nothing for this long, with calls waiting, is
    // most likely gone without a FIN or RST (a dead host, a dropped route).
    silence = Failure{make_error_code(errc::connection_lost),
                      "Redis at " + address_ + " sent nothing for " +
                          std::to_string(silence_limit().count()) +
                          " ms while calls waited for replies; the connection was replaced, and "
                          "the calls in flight on it may or may not have run"};
  }
  wake_at_ = Clock::time_point::max();
  if (expired_in_flight_ < in_flight_.size())
    wake_at_ = in_flight_[expired_in_flight_]->deadline;
  else if (!waiting_.empty())
    wake_at_ = waiting_.front()->deadline;
  if (silent_since_)
    wake_at_ = std::min(wake_at_, *silent_since_ + silence_limit());
  return silence;
}

bool Pipeline::silent_too_long(Clock::time_point now) {
  if (!silent_since_)
    return false;
  if (read_time_ > *silent_since_ || !connected_) {
    silent_since_.reset();  // a reply came after all, or the connection is gone anyway
    return false;
  }
  if (now < *silent_since_ + silence_limit())
    return false;
  silent_since_.reset();
  return true;
}

void Pipeline::expire_due(Clock::time_point now) {
  const auto timeout = [this] { return std::to_string(command_timeout_.count()) + " ms"; };
  while (expired_in_flight_ < in_flight_.size() &&
         in_flight_[expired_in_flight_]->deadline <= now) {
    // Stays in in_flight_ so that its replies, when they come, are matched and dropped.
    Operation& operation = *in_flight_[expired_in_flight_];
    ++expired_in_flight_;
    if (read_time_ <= operation.sent && !silent_since_)
      silent_since_ = operation.sent;  // nothing has come since this call was made
    if (std::exchange(operation.answered, true))
      continue;  // cancelled: its caller has its outcome
    sink_.complete(operation, make_error_code(errc::command_timeout),
                   "Redis at " + address_ + " did not answer within " + timeout() +
                       "; the call was sent and may or may not have run");
  }
  while (!waiting_.empty() && waiting_.front()->deadline <= now) {
    OperationPtr operation = std::move(waiting_.front());
    waiting_.pop_front();
    if (fallbacks_waiting_ > 0)
      --fallbacks_waiting_;
    std::string detail = connected_ ? "the call waited " + timeout() + " to be sent to Redis at " +
                                          address_ + "; the call was not sent"
                                    : "no connection to Redis at " + address_ + " within " +
                                          timeout() + "; the call was not sent";
    if (!connected_ && !last_connect_failure_.empty())
      detail += " (the last attempt: " + last_connect_failure_ + ")";
    sink_.complete(*operation, make_error_code(errc::command_timeout), std::move(detail));
  }
}

void Pipeline::on_connected(Clock::time_point now) {
  connected_ = true;
  last_connect_failure_.clear();
  loaded_scripts_.clear();  // perhaps another server, or one restarted
  read_time_ = now;         // the handshake's replies came: the server was there
  silent_since_.reset();
}

void Pipeline::on_lost(const Failure& failure) {
  connected_ = false;  // what the failures cause waits for the next connection
  unsent_.clear();     // its calls are in in_flight_, failed or sent again below
  std::deque<OperationPtr> resend;
  if (fallbacks_waiting_ > 0) {  // every call in flight may have run
    for (const OperationPtr& operation : in_flight_)
      mark_overtaken(*operation);
    fail_overtaken();
  }
  for (std::size_t i = expired_in_flight_; i < in_flight_.size(); ++i) {
    OperationPtr& operation = in_flight_[i];
    if (operation->answered)
      continue;  // cancelled: its caller has its outcome
    if (operation->retry_safe()) {
      operation->noscript_replies.clear();
      resend.push_back(std::move(operation));
    } else {
      sink_.complete(*operation, failure.error, failure.detail);
    }
  }
  in_flight_.clear();
  expired_in_flight_ = 0;
  fail_bound_waiting(failure.error, failure.detail);
  // Ahead of the queue, behind the re-sent script calls (which were sent before them).
  waiting_.insert(waiting_.begin() + static_cast<std::ptrdiff_t>(fallbacks_waiting_),
                  std::make_move_iterator(resend.begin()), std::make_move_iterator(resend.end()));
}

void Pipeline::fail_all(const Failure& failure) {
  connected_ = false;
  unsent_.clear();
  std::deque<OperationPtr> in_flight = std::exchange(in_flight_, {});
  const std::size_t expired = std::exchange(expired_in_flight_, 0);
  for (std::size_t i = expired; i < in_flight.size(); ++i)
    if (!in_flight[i]->answered)
      sink_.complete(*in_flight[i], failure.error, failure.detail);
  std::deque<OperationPtr> waiting = std::exchange(waiting_, {});
  fallbacks_waiting_ = 0;
  for (OperationPtr& operation : waiting)
    sink_.complete(*operation, failure.error, failure.detail);
}

void Pipeline::fail_bound_waiting(std::error_code error, const std::string& detail) {
  std::deque<OperationPtr> bound;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->bound_to_connection) {
      if (static_cast<std::size_t>(it - waiting_.begin()) < fallbacks_waiting_)
        --fallbacks_waiting_;
      bound.push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (OperationPtr& operation : bound)
    sink_.complete(*operation, error, detail);
}

void Pipeline::retire(std::error_code route_again, const std::string& detail) {
  connected_ = false;
  unsent_.clear();
  fail_bound_waiting(make_error_code(errc::connection_lost), detail);
  std::deque<OperationPtr> in_flight = std::exchange(in_flight_, {});
  const std::size_t expired = std::exchange(expired_in_flight_, 0);
  for (std::size_t i = expired; i < in_flight.size(); ++i) {
    if (in_flight[i]->answered)
      continue;
    if (in_flight[i]->retry_safe())
      sink_.complete(*in_flight[i], route_again, {});
    else
      sink_.complete(*in_flight[i], make_error_code(errc::connection_lost), detail);
  }
  std::deque<OperationPtr> waiting = std::exchange(waiting_, {});
  fallbacks_waiting_ = 0;
  for (OperationPtr& operation : waiting)
    sink_.complete(*operation, route_again, {});
}

std::optional<Pipeline::CancelScope> cancel_scope(asio::cancellation_type type) noexcept {
  using asio::cancellation_type;
  if ((type & cancellation_type::terminal) != cancellation_type::none)
    return Pipeline::CancelScope::even_if_sent;
  if ((type & (cancellation_type::partial | cancellation_type::total)) != cancellation_type::none)
    return Pipeline::CancelScope::unsent;
  return std::nullopt;
}

}  // namespace leasehold::detail
