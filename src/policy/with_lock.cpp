#include "leasehold/with_lock.hpp"

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <future>
#include <thread>

#include "leasehold/detail/timer.hpp"
#include "leasehold/lock_set.hpp"
#include "leasehold/raw_lock.hpp"

namespace leasehold {

bool LockContext::Node::vouches() const {
  return held && held->load() && Clock::now() < lease->deadline();
}

std::optional<std::uint64_t> LockContext::fence(const Locker& locker, std::string_view name) const {
  const std::string key = locker.key(name);
  for (const Node* node = top_.get(); node != nullptr; node = node->parent.get())
    if (node->locker == &locker && node->key == key && node->fence != 0 && node->vouches())
      return node->fence;
  return std::nullopt;
}

bool LockContext::holds(const Locker* locker, std::string_view key) const {
  for (const Node* node = top_.get(); node != nullptr; node = node->parent.get())
    if (node->locker == locker && node->key == key && node->vouches())
      return true;
  return false;
}

std::size_t LockContext::holds_of(const Locker* locker,
                                  const std::vector<std::string>& keys) const {
  return static_cast<std::size_t>(std::count_if(
      keys.begin(), keys.end(), [&](const std::string& key) { return holds(locker, key); }));
}

LockContext LockContext::holding(const Locker* locker, const std::vector<std::string>& keys,
                                 std::shared_ptr<const std::atomic<bool>> held,
                                 std::shared_ptr<const detail::LeaseState> lease) const {
  std::shared_ptr<const Node> top = top_;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint64_t fence = i < lease->fences.size() ? lease->fences[i] : lease->fence;
    top = std::make_shared<const Node>(Node{locker, keys[i], top, fence, held, lease});
  }
  return LockContext(std::move(top));
}

namespace detail {

std::vector<ChainEntry>& this_thread_chain() {
  thread_local std::vector<ChainEntry> chain;
  return chain;
}

LockEnding lock_ending(const LeaseGuard& guard, Clock::time_point settled_at) {
  return {.lost = !guard.keep_alive().held(settled_at),
          .revoked = guard.revoked(),
          .cause = guard.keep_alive().cause()};
}

void throw_if_lock_lost(std::string_view name, const LockEnding& ending) {
  if (!ending.lost && !ending.revoked)
    return;
  if (!ending.lost)
    throw LockLostError({}, "the locker shut down while the callback ran");
  const std::string lease = "the lease on '" + std::string(name) + "'";
  if (ending.cause == errc::hold_budget_exceeded)
    throw LockLostError(ending.cause, lease +
                                          " was held for its whole max_hold: it was no longer "
                                          "extended, and the callback was asked to stop");
  throw LockLostError(ending.cause,
                      ending.cause ? lease + " could not be extended: " + ending.cause.message()
                                   : lease + " expired or was taken over");
}

}  // namespace detail

Locker::Locker(Client& client, std::string prefix, Fencing fencing, std::string holder_label)
    : client_(client),
      prefix_(std::move(prefix)),
      fencing_(fencing),
      holder_label_(std::move(holder_label)) {
  detail::validate_prefix(prefix_);
}

Locker::Locker(Client& client, RawKeys) : Locker(client) {
  raw_ = true;
}

Locker::~Locker() {
  shutdown();
}

std::string Locker::key(std::string_view name) const {
  if (raw_)
    return std::string(name);
  std::string key;
  key.reserve(prefix_.size() + 4 + name.size());
  if (fencing()) {
    key.append(prefix_).append(":{");
    detail::append_escaped(key, name);
    key.append("}");
    return key;
  }
  key.append(prefix_).append(":").append(name);
  return key;
}

std::string Locker::fence_counter_key(std::string_view name) const {
  return detail::fence_counter_key(prefix_, key(name));
}

std::string Locker::server_fence_counter_key() const {
  return detail::server_fence_counter_key(prefix_);
}

std::optional<detail::FenceCounters> Locker::fence_counters(std::string_view name) const {
  if (!fencing())
    return std::nullopt;
  return detail::fence_counters(prefix_, key(name), own_fence_key(name));
}

std::string Locker::own_fence_key(std::string_view name) const {
  std::string key;
  key.reserve(prefix_.size() + 10 + name.size());
  key.append(prefix_).append(":{");
  detail::append_escaped(key, name);
  key.append("}:fence");
  return key;
}

TryLock<detail::WithLockTag> Locker::try_lock_query(std::string_view name,
                                                    std::chrono::milliseconds ttl) const {
  if (raw_)
    return TryLock<detail::WithLockTag>(key(name), ttl, detail::BareValue{});
  return TryLock<detail::WithLockTag>(key(name), ttl, fence_counters(name), holder_label_);
}

std::optional<std::uint64_t> Locker::fence(std::string_view name) const {
  const std::string wanted = key(name);
  for (const auto& entry : detail::this_thread_chain()) {
    if (entry.locker == this && entry.key == wanted && entry.fence != 0)
      return entry.fence;
  }
  return std::nullopt;
}

void Locker::validate(std::string_view name, const WithLockOptions& options) {
  if (name.empty())
    throw Error(make_error_code(errc::invalid_argument), "a lock name must not be empty");
  detail::validate_ttl(options.ttl);
  if (options.retry_attempts < 0 && options.retry_attempts != WithLockOptions::forever)
    throw Error(make_error_code(errc::invalid_argument),
                "retry_attempts must be >= 0, or WithLockOptions::forever");
  if (options.retry_delay < std::chrono::milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument), "retry_delay must not be negative");
  if (options.max_hold < std::chrono::milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument),
                "max_hold must not be negative (zero: no hold budget)");
}

detail::TurnWait Locker::turn_wait(std::string_view name, std::chrono::milliseconds ttl,
                                   Clock::time_point deadline, const WaitOptions& waiting) const {
  auto turn = raw_ ? detail::raw_turn(key(name), ttl)
                   : detail::lock_turn(key(name), ttl, fence_counters(name));
  return detail::TurnWait{std::move(turn), deadline, waiting, holder_label_};
}

WaitOptions Locker::waiting(const WithLockOptions& options) const {
  WaitOptions waiting;
  if (raw_)
    waiting.poll = std::max(options.retry_delay, std::chrono::milliseconds(1));
  return waiting;
}

Clock::time_point Locker::wait_deadline(const WithLockOptions& options) {
  const Clock::time_point now = Clock::now();
  if (options.retry_attempts == WithLockOptions::forever)
    return Clock::time_point::max();
  // Saturates: a budget past the clock's range is forever.
  const auto budget = std::chrono::duration<double, std::milli>(options.retry_delay) *
                      static_cast<double>(options.retry_attempts);
  if (budget >= std::chrono::duration<double, std::milli>(Clock::time_point::max() - now))
    return Clock::time_point::max();
  return now + std::chrono::duration_cast<Clock::duration>(budget);
}

AcquireError Locker::busy(std::string_view name, const WithLockOptions& options) {
  std::string why = "could not take the lock '" + std::string(name) + "': ";
  if (options.retry_attempts == 0)
    return AcquireError(make_error_code(errc::lock_busy), why + "it is held (one attempt)");
  const auto waited = std::chrono::milliseconds(options.retry_delay.count() *
                                                static_cast<long long>(options.retry_attempts));
  return AcquireError(make_error_code(errc::lock_busy),
                      why + "still held after " + std::to_string(waited.count()) + " ms (" +
                          std::to_string(options.retry_attempts) + " retries of " +
                          std::to_string(options.retry_delay.count()) + " ms)");
}

std::optional<LockToken<detail::WithLockTag>> Locker::wait_in_turn(std::string_view name,
                                                                   std::chrono::milliseconds ttl,
                                                                   Clock::time_point deadline,
                                                                   const WaitOptions& waiting,
                                                                   std::stop_token stop) {
  if (client_.running_in_io_thread())
    throw Error(make_error_code(errc::called_from_io_thread),
                "a waiting lock was called on the client's I/O thread; use async_with_lock()");
  return detail::wait_in_turn<LockToken<detail::WithLockTag>>(
      client_, turn_wait(name, ttl, deadline, waiting), std::move(stop),
      shutdown_stop_.get_token());
}

bool Locker::is_shut_down() const {
  std::lock_guard lock(mutex_);
  return shut_down_;
}

std::optional<Locker::HeldId> Locker::register_held(std::shared_ptr<detail::LeaseState> lease,
                                                    std::function<void()> on_shutdown) {
  std::lock_guard lock(mutex_);
  if (shut_down_)
    return std::nullopt;  // taken while shutting down: the caller releases it
  const HeldId id = ++next_id_;
  held_.emplace(id, HeldLease{std::move(lease), std::move(on_shutdown)});
  return id;
}

void Locker::unregister_held(HeldId id) {
  std::lock_guard lock(mutex_);
  held_.erase(id);
}

void Locker::block_after_shutdown(std::stop_token stop) {
  // The stop callback locks mutex_: it is registered (and may run at once) before the lock is
  // taken, and unregistered after it is released.
  std::stop_callback wake(stop, [this] {
    std::lock_guard inner(mutex_);
    changed_.notify_all();
  });
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return stop.stop_requested(); });
}

void Locker::end_after_shutdown(std::stop_token stop) {
  block_after_shutdown(std::move(stop));
  throw Error(make_error_code(errc::closed), "the locker was shut down");
}

void Locker::release_quietly(const std::shared_ptr<detail::LeaseState>& lease) noexcept {
  try {
    std::error_code ignored;
    client_.process(ReleaseLock<detail::WithLockTag>(lease), ignored);
  } catch (...) {
    // A failed release is not reported: the key expires with its TTL.
  }
}

void Locker::release_quietly_async(const std::shared_ptr<detail::LeaseState>& lease) noexcept {
  try {
    client_.async_process(ReleaseLock<detail::WithLockTag>(lease), [](std::error_code, bool) {});
  } catch (...) {
    // As above: the key expires with its TTL.
  }
}

void Locker::shutdown() noexcept {
  std::vector<HeldLease> held;
  {
    std::lock_guard lock(mutex_);
    if (shut_down_)
      return;
    shut_down_ = true;
    for (auto& [id, lease] : held_)
      held.push_back(lease);
    held_.clear();
    changed_.notify_all();
  }
  shutdown_stop_.request_stop();  // the waits in turn end at once
  // Tell the holders first (stop tokens, lost flags): the moment the release lands, another node
  // may take the lock.
  for (auto& lease : held) {
    try {
      if (lease.on_shutdown)
        lease.on_shutdown();
    } catch (...) {
    }
  }
  try {
    // One batch, so other nodes need not wait for the TTLs. Bounded: at most the command
    // timeout (and no wait at all on the client's own I/O thread, where waiting would block it).
    std::vector<ReleaseLock<detail::WithLockTag>> releases;
    for (const auto& lease : held)
      releases.emplace_back(lease.lease);
    if (!releases.empty()) {
      auto done = std::make_shared<std::promise<void>>();
      auto finished = done->get_future();
      client_.async_process(std::span<const ReleaseLock<detail::WithLockTag>>(releases),
                            [done](std::error_code, auto) { done->set_value(); });
      if (!client_.running_in_io_thread())
        finished.wait_for(client_.options().command_timeout + std::chrono::milliseconds(100));
    }
  } catch (...) {
  }
}

std::optional<LockToken<detail::WithLockTag>> Locker::try_once(std::string_view name,
                                                               std::chrono::milliseconds ttl) {
  return client_.process(try_lock_query(name, ttl));
}

Locker::NamesAndKeys Locker::lock_set_of(std::vector<std::string> names,
                                         const WithLockOptions& options) const {
  if (raw_)
    throw Error(make_error_code(errc::invalid_argument),
                "with_locks needs leasehold's own keys: a Locker with raw keys shares single "
                "locks with other clients, which know no lock sets");
  for (const std::string& name : names)
    validate(name, options);
  auto [ordered, keys] = detail::ordered_names<std::string>(
      names, [this](const std::string& name) { return key(name); });
  detail::validate_lock_set_size(ordered.size());
  return {std::move(ordered), std::move(keys)};
}

detail::LockSetTry Locker::set_attempt(const NamesAndKeys& set,
                                       const WithLockOptions& options) const {
  std::optional<std::vector<detail::FenceCounters>> fences;
  if (fencing()) {
    fences.emplace();
    for (const std::string& name : set.names)
      fences->push_back(*fence_counters(name));
  }
  return detail::LockSetTry(detail::LockSetKeys{set.keys, {}, {}, {}}, std::move(fences),
                            options.ttl, holder_label_);
}

std::function<detail::TurnWait(std::size_t)> Locker::set_turns(const NamesAndKeys& set,
                                                               const WithLockOptions& options,
                                                               Clock::time_point deadline) const {
  return [this, names = set.names, ttl = options.ttl, deadline, waits = waiting(options)](
             std::size_t busy) { return turn_wait(names[busy], ttl, deadline, waits); };
}

void Locker::refuse_partly_held(std::string_view call) {
  throw Error(make_error_code(errc::invalid_argument),
              std::string(call) +
                  ": the caller holds some of these names already but not all; a set taken now "
                  "would wait for a name its own caller holds (take the whole set in the outer "
                  "call)");
}

std::optional<LockToken<detail::WithLockTag>> Locker::acquire_set(const NamesAndKeys& set,
                                                                  const WithLockOptions& options,
                                                                  std::stop_token caller_stop) {
  const detail::LockSetTry attempt = set_attempt(set, options);
  std::shared_ptr<detail::LeaseState> lease;
  if (options.retry_attempts == 0) {
    lease = client_.process(attempt).lease;
  } else {
    if (client_.running_in_io_thread())
      throw Error(make_error_code(errc::called_from_io_thread),
                  "with_locks was called on the client's I/O thread; use async_with_locks()");
    const Clock::time_point deadline = wait_deadline(options);
    std::optional<LockToken<detail::WithLockTag>> token =
        detail::wait_with<LockToken<detail::WithLockTag>>(
            [&](detail::TurnWaitDone done) {
              return detail::make_lock_set_wait(client_, attempt, set_turns(set, options, deadline),
                                                deadline, std::move(done));
            },
            caller_stop, shutdown_stop_.get_token());
    if (token)
      lease = detail::TokenAccess::state(*token);
    if (!lease && is_shut_down())
      return std::nullopt;
    if (!lease && caller_stop.stop_requested())
      throw Error(make_error_code(errc::closed), "with_locks was cancelled by its stop token");
  }
  if (!lease)
    throw busy(set.quoted(), options);
  if (caller_stop.stop_requested()) {  // the lease it got anyway is given back, unused
    release_quietly(lease);
    throw Error(make_error_code(errc::closed), "with_locks was cancelled by its stop token");
  }
  return detail::TokenAccess::make<LockToken<detail::WithLockTag>>(std::move(lease));
}

std::optional<LockToken<detail::WithLockTag>> Locker::acquire(std::string_view name,
                                                              const WithLockOptions& options,
                                                              std::stop_token caller_stop) {
  const auto cancelled = [] {
    return Error(make_error_code(errc::closed), "with_lock was cancelled by its stop token");
  };
  std::optional<LockToken<detail::WithLockTag>> token;
  if (options.retry_attempts == 0) {
    token = try_once(name, options.ttl);
  } else {
    token = wait_in_turn(name, options.ttl, wait_deadline(options), waiting(options), caller_stop);
    if (!token && is_shut_down())
      return std::nullopt;
    if (!token && caller_stop.stop_requested())
      throw cancelled();
  }
  if (!token)
    throw busy(name, options);
  // Stopped while the acquire was in flight: the lease it got anyway is given back, unused.
  if (caller_stop.stop_requested()) {
    release_quietly(detail::TokenAccess::state(*token));
    throw cancelled();
  }
  return token;
}

LockContext Locker::implicit_context(const asio::any_io_executor& executor,
                                     const asio::cancellation_slot& slot) {
  const auto* strand = detail::executor_target<detail::CallChainStrand>(executor);
  if (strand == nullptr || !slot.is_connected() || *strand->owner != slot)
    return {};
  return strand->chain;
}

asio::awaitable<void> Locker::stay_pending() {
  detail::Timer forever(co_await asio::this_coro::executor, Clock::time_point::max());
  co_await forever.async_wait(asio::use_awaitable);
  throw Error(make_error_code(errc::closed), "the locker was shut down");
}

asio::awaitable<LockToken<detail::WithLockTag>> Locker::async_acquire(std::string name,
                                                                      WithLockOptions options) {
  if (is_shut_down())
    co_await stay_pending();
  std::optional<LockToken<detail::WithLockTag>> token;
  if (options.retry_attempts == 0) {
    token = co_await client_.async_process(try_lock_query(name, options.ttl), asio::use_awaitable);
  } else {
    std::error_code failed;
    token = co_await detail::async_wait_in_turn<LockToken<detail::WithLockTag>>(
        client_, turn_wait(name, options.ttl, wait_deadline(options), waiting(options)),
        shutdown_stop_.get_token(), asio::redirect_error(asio::use_awaitable, failed));
    if (failed == asio::error::operation_aborted && is_shut_down())
      co_await stay_pending();
    if (failed)
      throw std::system_error(failed);
  }
  const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
  co_return took_async(std::move(token), caller.cancelled() != asio::cancellation_type::none, name,
                       options);
}

// g++ 12 can report -Wmismatched-new-delete for this coroutine's frame, which Asio allocates and
// frees with its own matching operators (a false positive: GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<LockToken<detail::WithLockTag>> Locker::async_acquire_set(NamesAndKeys set,
                                                                          WithLockOptions options) {
  if (is_shut_down())
    co_await stay_pending();
  const detail::LockSetTry attempt = set_attempt(set, options);
  std::optional<LockToken<detail::WithLockTag>> token;
  if (options.retry_attempts == 0) {
    detail::LockSetTried tried = co_await client_.async_process(attempt, asio::use_awaitable);
    if (tried.lease)
      token = detail::TokenAccess::make<LockToken<detail::WithLockTag>>(std::move(tried.lease));
  } else {
    const Clock::time_point deadline = wait_deadline(options);
    // Named, not written inside the co_await: GCC 12 destroys the captures of a lambda written
    // there twice (GCC bug 101976).
    auto make_wait = [this, attempt, turns = set_turns(set, options, deadline),
                      deadline](detail::TurnWaitDone done) mutable {
      return detail::make_lock_set_wait(client_, std::move(attempt), std::move(turns), deadline,
                                        std::move(done));
    };
    std::error_code failed;
    token = co_await detail::async_wait_with<LockToken<detail::WithLockTag>>(
        client_, std::move(make_wait), shutdown_stop_.get_token(),
        asio::redirect_error(asio::use_awaitable, failed));
    if (failed == asio::error::operation_aborted && is_shut_down())
      co_await stay_pending();
    if (failed)
      throw std::system_error(failed);
  }
  const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
  co_return took_async(std::move(token), caller.cancelled() != asio::cancellation_type::none,
                       set.quoted(), options);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

LockToken<detail::WithLockTag> Locker::took_async(
    std::optional<LockToken<detail::WithLockTag>> token, bool caller_cancelled,
    std::string_view what, const WithLockOptions& options) {
  if (!token)
    throw busy(what, options);
  // The caller cancelled while the acquire was in flight. A call sent cannot be taken back: a
  // lease it got anyway is given back at once, and the callback never starts.
  if (caller_cancelled) {
    release_quietly_async(detail::TokenAccess::state(*token));
    throw std::system_error(asio::error::operation_aborted);
  }
  return std::move(*token);
}

}  // namespace leasehold
