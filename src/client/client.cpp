#include "leasehold/client.hpp"

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <future>
#include <thread>

#include "cluster_connection.hpp"
#include "server_connection.hpp"
#include "tls.hpp"

namespace leasehold {
namespace {

ClientOptions validated(ClientOptions options, const RedisUrl& url) {
  // The URL's parameters win: a deployment's URL says what its replication asks for.
  if (url.replica_acks)
    options.replica_acks = *url.replica_acks;
  if (url.replica_ack_timeout)
    options.replica_ack_timeout = *url.replica_ack_timeout;
  if (url.safe_failover)
    options.safe_failover = *url.safe_failover;
  using std::chrono::milliseconds;
  if (options.connect_timeout <= milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument), "the connect timeout must be positive");
  if (options.command_timeout <= milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument), "the command timeout must be positive");
  if (options.reconnect_delay_min <= milliseconds::zero() ||
      options.reconnect_delay_max < options.reconnect_delay_min)
    throw Error(make_error_code(errc::invalid_argument),
                "the reconnect delays must be positive, with min <= max");
  if (options.replica_acks < 0)
    throw Error(make_error_code(errc::invalid_argument),
                "replica_acks must be 0 (off) or the number of replicas to wait for");
  if (options.safe_failover && options.replica_acks == 0 &&
      url.transport != RedisUrl::Transport::sentinel)
    throw Error(make_error_code(errc::invalid_argument),
                "safe_failover must know how many replicas a failover may promote: a "
                "redis-sentinel:// URL tells it, else set replica_acks to the number of replicas");
  const bool acknowledged = options.replica_acks > 0 || options.safe_failover;
  if (acknowledged && (options.replica_ack_timeout <= milliseconds::zero() ||
                       options.replica_ack_timeout >= options.command_timeout))
    throw Error(make_error_code(errc::invalid_argument),
                "the replica acknowledgement timeout must be positive and shorter than the "
                "command timeout");
  if (options.cluster_refresh_interval <= milliseconds::zero())
    throw Error(make_error_code(errc::invalid_argument),
                "the cluster refresh interval must be positive");
  return options;
}

// The io_context of a caller's executor: an io_context's executor (with any of its properties
// required or preferred), or a strand of one. Null for anything else.
template <unsigned int... Bits>
asio::io_context* io_context_of(const asio::any_io_executor& executor,
                                std::integer_sequence<unsigned int, Bits...>) {
  asio::io_context* found = nullptr;
  auto try_type = [&]<class E>(std::type_identity<E>) {
    if (found != nullptr)
      return;
    if (const E* io = detail::executor_target<E>(executor))
      found = &io->context();
    else if (const auto* strand = detail::executor_target<asio::strand<E>>(executor))
      found = &strand->get_inner_executor().context();
  };
  (try_type(
       std::type_identity<asio::io_context::basic_executor_type<std::allocator<void>, Bits>>{}),
   ...);
  return found;
}

asio::io_context::executor_type io_executor_of(const asio::any_io_executor& executor) {
  asio::io_context* io = io_context_of(executor, std::make_integer_sequence<unsigned int, 8>{});
  if (io == nullptr)
    throw Error(make_error_code(errc::invalid_argument),
                "a leasehold::Client runs on an asio::io_context: pass the executor of one "
                "(io.get_executor()) or of a strand of one");
  return io->get_executor();
}

std::shared_ptr<detail::Transport> make_transport(asio::io_context::executor_type executor,
                                                  RedisUrl url, ClientOptions options) {
  const TlsOptions& tls_options = options.tls;
  const bool tls_configured = !tls_options.ca_file.empty() || !tls_options.cert_file.empty() ||
                              !tls_options.key_file.empty() || !tls_options.server_name.empty();
  if (tls_configured && !url.tls) {
    throw Error(make_error_code(errc::invalid_argument),
                "TLS certificates are set in the client options, but the URL '" + url.to_string() +
                    "' does not use TLS; use rediss:// (or rediss-cluster://)");
  }
  // Loaded once, here: a file that cannot be used is the caller's error, not a connection's.
  auto tls = url.tls ? detail::make_tls_context(tls_options) : nullptr;
  if (url.transport == RedisUrl::Transport::cluster) {
    auto cluster = std::make_shared<detail::ClusterConnection>(std::move(executor), std::move(url),
                                                               std::move(options), std::move(tls));
    cluster->start();
    return cluster;
  }
  auto core = std::make_shared<detail::ServerConnection>(std::move(executor), std::move(url),
                                                         std::move(options), std::move(tls));
  core->start();
  return core;
}

// The transport for `url`, with the options checked and the URL's parameters applied.
std::shared_ptr<detail::Transport> make_checked_transport(asio::io_context::executor_type executor,
                                                          RedisUrl url, ClientOptions options) {
  ClientOptions checked = validated(std::move(options), url);
  return make_transport(std::move(executor), std::move(url), std::move(checked));
}

}  // namespace

namespace {
std::error_code io_thread_error(const detail::Transport& core, const void* owned_thread);
}  // namespace

struct Client::OwnedThread {
  asio::io_context context{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
  std::thread thread;
  // Set when the Client is destroyed on this very thread (from one of its own handlers): the
  // thread cannot be joined then, so it is detached and deletes this object when run() returns.
  std::atomic<bool> orphaned{false};
};

Client::Client(std::string_view url, ClientOptions options)
    : Client(RedisUrl::parse(url), std::move(options)) {}

Client::Client(RedisUrl url, ClientOptions options) : owned_(std::make_unique<OwnedThread>()) {
  core_ =
      make_checked_transport(owned_->context.get_executor(), std::move(url), std::move(options));
  owned_->thread = std::thread([owned = owned_.get()] {
    owned->context.run();
    if (owned->orphaned.load(std::memory_order_acquire))
      delete owned;
  });
}

Client::Client(asio::any_io_executor executor, std::string_view url, ClientOptions options)
    : core_(make_checked_transport(io_executor_of(executor), RedisUrl::parse(url),
                                   std::move(options))) {}

Client::~Client() {
  release();
}

void Client::release() noexcept {
  close();
  if (owned_ && owned_->thread.get_id() == std::this_thread::get_id()) {
    // Destroyed by one of its own handlers: the thread finishes the work and cleans up.
    owned_->thread.detach();
    owned_->orphaned.store(true, std::memory_order_release);
    owned_->work.reset();
    core_.reset();
    (void)owned_.release();  // the thread deletes it
    return;
  }
  if (owned_) {
    owned_->work.reset();
    if (owned_->thread.joinable())
      owned_->thread.join();
  }
  core_.reset();
  owned_.reset();
}

Client::Client(Client&&) noexcept = default;

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    release();
    owned_ = std::move(other.owned_);
    core_ = std::move(other.core_);
  }
  return *this;
}

const RedisUrl& Client::url() const noexcept {
  return core_->url();
}
const ClientOptions& Client::options() const noexcept {
  return core_->options();
}
asio::any_io_executor Client::get_executor() const noexcept {
  return core_->strand();
}

const detail::ConnectionStrand& Client::strand() const noexcept {
  return core_->strand();
}

bool Client::running_in_io_thread() const noexcept {
  return static_cast<bool>(check_not_io_thread());
}

void Client::close() noexcept {
  if (core_)
    core_->close();
}

void Client::close(std::chrono::milliseconds drain) noexcept {
  // On the I/O thread the requests could not be answered while this waits: no drain there.
  if (core_ && !check_not_io_thread())
    core_->unwatched()->wait_for_none(drain);
  close();
}

void Client::submit(std::unique_ptr<detail::Operation> operation) {
  core_->submit(std::move(operation));
}

namespace detail {

bool Operation::retry_safe() const noexcept {
  for (const Request& request : requests_)
    if (!request.is_retry_safe())
      return false;
  return true;
}

namespace {

// A request whose outcome nobody waits for, counted until it is answered or fails (or is
// dropped with its transport).
class UnwatchedRequest final : public Operation {
 public:
  UnwatchedRequest(Request request, std::shared_ptr<UnwatchedRequests> unwatched)
      : request_(std::move(request)), unwatched_(std::move(unwatched)) {
    sent = Clock::now();
    set_requests({&request_, 1});
    unwatched_->add();
  }
  ~UnwatchedRequest() override { unwatched_->remove(); }
  UnwatchedRequest(const UnwatchedRequest&) = delete;
  UnwatchedRequest& operator=(const UnwatchedRequest&) = delete;

  void on_reply(std::size_t, Reply&&) override {}
  void complete(Transport&, std::error_code, std::string) override {}

 private:
  Request request_;
  std::shared_ptr<UnwatchedRequests> unwatched_;
};

}  // namespace

std::uint64_t new_operation_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

void CancelOperation::operator()(asio::cancellation_type type) const {
  const std::shared_ptr<Transport> alive = transport.lock();
  if (!alive)
    return;
  const auto& strand = alive->strand();
  asio::post(strand, [alive, id = id, type] { alive->cancel(id, type); });
}

void send_without_waiting(Transport& core, Request request) {
  core.submit(std::make_unique<UnwatchedRequest>(std::move(request), core.unwatched()));
}

std::shared_ptr<Transport> transport_of(const Client& client) noexcept {
  return client.core_;
}

Clock::time_point connection_now(const Transport& core) noexcept {
  return core.now();
}

Observer* observer_of(const Transport& core) noexcept {
  return core.options().observer.get();
}

}  // namespace detail

void Client::when_connected(detail::UniqueFunction<void(std::error_code, std::string)> callback) {
  core_->when_connected(std::move(callback));
}

namespace {

// A blocking call on the thread that runs the connection would wait for itself forever.
std::error_code io_thread_error(const detail::Transport& core, const void* owned_thread) {
  if (core.strand().running_in_this_thread())
    return make_error_code(errc::called_from_io_thread);
  // A coroutine or handler of the io_context that runs the connection (outside its strand).
  if (core.strand().get_inner_executor().running_in_this_thread())
    return make_error_code(errc::called_from_io_thread);
  if (owned_thread != nullptr &&
      static_cast<const std::thread*>(owned_thread)->get_id() == std::this_thread::get_id())
    return make_error_code(errc::called_from_io_thread);
  return {};
}

}  // namespace

std::error_code Client::check_not_io_thread() const noexcept {
  return io_thread_error(*core_, owned_ ? &owned_->thread : nullptr);
}

std::pair<std::error_code, std::string> Client::wait_connected() {
  if (auto ec = check_not_io_thread())
    return {ec, "connect() was called on the client's I/O thread"};
  std::promise<std::pair<std::error_code, std::string>> promise;
  auto future = promise.get_future();
  when_connected([&promise](std::error_code error, std::string why) {
    promise.set_value({error, std::move(why)});
  });
  return future.get();
}

void Client::connect(std::error_code& ec) {
  ec = wait_connected().first;
}

void Client::connect() {
  auto [ec, detail] = wait_connected();
  throw_if(ec, detail);
}

}  // namespace leasehold
