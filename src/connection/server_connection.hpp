// The transport: one pipelined connection to one Redis server, owned by a strand.
//
// Every member below is touched only on strand_. Public entry points (submit, when_connected,
// close) may be called from any thread: they run their work on the strand, at once when the
// calling thread may enter it.
//
// The calls' bookkeeping (queues, matching replies, NOSCRIPT resends, timeouts) is `pipeline_`,
// which does no I/O; the connection's setup is a Handshake. What is here is the I/O around them:
// connecting, the read and write loops, and the timers.
//
// Writing: queued calls go out in one non-blocking write, made on the strand by whoever queued
// them (a call on an idle connection is written at once; calls made by callers that replies
// resumed are written by the read loop when it has delivered a chunk of replies; others wake the
// writer coroutine, which writes everything that queued meanwhile). What the socket does not
// take at once stays in the pipeline as unsent, and the writer coroutine waits until it is sent.
//
// TLS (rediss://): the same loops read and write through `tls_`, an SSL stream over the socket.
// Calls are then never written straight from the strand (an SSL write that the socket does not
// take whole cannot be finished later by a plain write): the writer coroutine sends them all.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/basic_stream_socket.hpp>
#include <asio/basic_waitable_timer.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "codec.hpp"
#include "failure.hpp"
#include "leasehold/detail/operation.hpp"
#include "leasehold/detail/timer.hpp"
#include "leasehold/options.hpp"
#include "leasehold/url.hpp"
#include "pipeline.hpp"
#include "reconnect_schedule.hpp"
#include "sentinel_discovery.hpp"
#include "transport.hpp"

namespace leasehold::detail {

class Subscriber;

class ServerConnection final : public TransportBase, private PipelineSink {
 public:
  using Strand = ConnectionStrand;
  // The loops and the I/O objects are typed on the strand itself rather than on any_io_executor:
  // asio then hands each completion to the strand without first wrapping the strand in a new
  // type-erased executor (a heap allocation or two per completion).
  template <class T>
  using Awaitable = asio::awaitable<T, Strand>;
  using Socket = asio::basic_stream_socket<asio::generic::stream_protocol, Strand>;
  using Timer = BasicTimer<Strand>;

  using TlsContext = std::shared_ptr<asio::ssl::context>;
  using TlsStream = asio::ssl::stream<Socket&>;
  using Resolver = asio::ip::basic_resolver<asio::ip::tcp, Strand>;
  // The completion token of the loops' and the setup's awaits, on the strand.
  static constexpr asio::use_awaitable_t<Strand> use_awaitable{};

  // `tls` (from make_tls_context) for a rediss:// URL, null otherwise.
  ServerConnection(asio::io_context::executor_type executor, RedisUrl url, ClientOptions options,
                   TlsContext tls = nullptr);
  // On a given strand: a cluster runs all its connections on its own strand.
  ServerConnection(Strand strand, RedisUrl url, ClientOptions options, TlsContext tls = nullptr);

  // Starts the connect/reconnect loop. Call once, right after construction.
  void start();

  // Like close(), for a cluster node that no longer serves slots: calls not yet sent, and
  // retry-safe calls in flight, complete with route_again_error() so that the cluster routes them
  // again; other calls in flight fail with connection_lost. Call on the strand.
  void retire();

  // Subscriber mode, on the strand, before start(): the pipeline's pushes go to `sink`, and
  // `observer` hears of every connection made (true) and lost (false).
  void set_push_sink(PushSink* sink) noexcept { pipeline_.set_push_sink(sink); }
  void set_connection_observer(UniqueFunction<void(bool)> observer) {
    connection_observer_ = std::move(observer);
  }

  // Before start(): whether the connection, behind Sentinel, watches the sentinels for a new
  // master itself (it does unless told otherwise: a subscriber's connection is told by its
  // owner's).
  void set_watches_sentinels(bool watches) noexcept { watches_sentinels_ = watches; }
  // Behind Sentinel, on the strand: `sentinel` named `master` the master. If that is not the
  // server this connection reaches, the connection is left (and made again to the master the
  // sentinels name then, that sentinel asked first) or, while it waits to reconnect, made again
  // now.
  void master_named(const RedisUrl::Endpoint& master, const RedisUrl::Endpoint& sentinel);

  // The subscriber of this server, made at the first call (on the strand).
  Notifications& notifications() override;

  // Whether the connection made last sends the Redis 6 forms of calls (Redis6Forms): the URL
  // says so (?compat=redis6), or the server is older than Redis 7.0 (it said so, or refused
  // SET ... NX ... GET). On the strand.
  bool uses_redis6_forms() const noexcept { return pipeline_.uses_redis6_forms(); }

  // Clock::now(), except on the strand while the replies of one read are handed out: then the
  // time that read completed (see connection_now() in client.hpp).
  Clock::time_point now() const noexcept override {
    return strand_.running_in_this_thread() && delivering_ ? pipeline_.read_time() : Clock::now();
  }
  // Behind Sentinel: the replicas the sentinel that named the master listed last.
  std::optional<int> replicas_known() const noexcept override { return replicas_known_; }

 private:
  std::shared_ptr<ServerConnection> self() {
    return std::static_pointer_cast<ServerConnection>(shared_from_this());
  }
  std::unique_ptr<Operation> prepare(std::unique_ptr<Operation> operation) override;
  void accept(std::unique_ptr<Operation> operation) override;
  void cancel(std::uint64_t id, asio::cancellation_type type) override;
  bool ready() const override { return pipeline_.connected(); }
  void shut_down(const Failure& closed) override;
  void stop_io();
  void complete(Operation& operation, std::error_code error, std::string detail) override {
    operation.complete(*this, error, std::move(detail));
  }

  // A socket, the TLS session over it, and the buffer its reads fill: the connection's own, or
  // one to a sentinel it watches.
  struct Link {
    Socket& socket;
    std::optional<TlsStream>& tls;
    std::vector<char>& buffer;
  };
  Link own_link() noexcept { return {socket_, tls_, read_buffer_}; }
  // The watch of one sentinel (server_connection_watch.cpp).
  struct SentinelWatch;

  Awaitable<void> run();
  Awaitable<Failure> connect_once();
  // Resolves and connects the link's socket to `where` (`what` names it in messages: "Redis",
  // "the sentinel"), then makes the TLS session if the URL asks for one. Closing the socket or
  // cancelling `resolver` ends it; so does `timed_out` between endpoints.
  Awaitable<Failure> open_stream(Link link, const RedisUrl& where, std::string_view what,
                                 Resolver& resolver, const bool& timed_out);
  // Behind Sentinel: asks the sentinels of a round (SentinelDiscovery) until one names a master,
  // which server_ then is; else why none did.
  Awaitable<Failure> find_master(const std::shared_ptr<Resolver>& resolver,
                                 const std::shared_ptr<bool>& timed_out);
  // Sends `request` to `sentinel`, to which the link is connected, and reads its replies into
  // `reader`: its answer (`rounds`'), or nothing and `failure`.
  Awaitable<std::optional<SentinelDiscovery::Answer>> ask_sentinel(
      Link link, SentinelDiscovery& rounds, std::string_view request, codec::ReplyReader& reader,
      const RedisUrl::Endpoint& sentinel, Failure& failure);
  Awaitable<Failure> tls_handshake(Link link, const RedisUrl& where);
  // Writes `request` on `link`, then reads into `reader` until `answer(reader)` (an optional)
  // gives a value: that value, or nothing and `ec` when the stream broke first. The setup's
  // exchanges (the handshake, a sentinel's question) use it, before the read loop runs, and the
  // sentinel watch's.
  template <class Answer>
  auto exchange(Link link, std::string_view request, codec::ReplyReader& reader, Answer answer,
                std::error_code& ec)
      -> Awaitable<std::invoke_result_t<Answer&, codec::ReplyReader&>>;
  // Behind Sentinel (server_connection_watch.cpp): starts watching each sentinel in `known` not
  // yet watched, for as long as the connection is open.
  void watch_sentinels(const std::vector<RedisUrl::Endpoint>& known);
  // Watches one sentinel, again after each time its connection breaks, telling master_named()
  // each new master its events name.
  Awaitable<void> watch_loop(std::shared_ptr<SentinelWatch> watch);
  // Once: until the watched sentinel's connection breaks (or the connection is closed). What
  // the sentinel said when it refused the subscription, if it did.
  Awaitable<std::optional<std::string>> watch_once(SentinelWatch& watch);
  // Reads the events of the watched sentinel (after what `reader` holds), until its connection
  // breaks or it refuses the subscription (what it said then).
  Awaitable<std::optional<std::string>> follow_events(SentinelWatch& watch,
                                                      codec::ReplyReader& reader);
  void stop_watches();
  // Whether `endpoint` is the server this connection reaches (server_).
  bool reaches(const RedisUrl::Endpoint& endpoint) const noexcept {
    return endpoint.host == server_.host && endpoint.port == server_.port;
  }
  std::string connect_timeout_detail() const;
  Awaitable<Failure> handshake();
  Awaitable<void> read_loop(Failure& failure);
  // Plain sockets read through a chain of handlers (read_loop waits for its end): a coroutine
  // resumption per read costs about as much as all the rest of handing a reply out.
  void start_read();
  void on_read(std::error_code ec, std::size_t size, std::uint64_t chain);
  // Hands out the replies in the `size` bytes just read; false (and `failure`) when the stream is
  // broken.
  bool handle_read(std::size_t size, Failure& failure);
  Failure lost_while_reading(std::error_code ec);
  Awaitable<void> write_loop(Failure& failure);
  Awaitable<void> expire_loop();

  void send_waiting();
  void wake_writer();
  void on_time();
  // Moves the expiry timer earlier when the pipeline wants to be woken before it fires.
  void arm_expiry();
  void fail_everything(const Failure& failure);

  Socket socket_;
  const TlsContext tls_context_;
  std::optional<asio::ssl::stream<Socket&>> tls_;  // a new one for every connection
  bool tls_handshaking_ = false;
  Timer writer_wakeup_;
  Timer expiry_timer_;
  Timer backoff_timer_;
  Timer read_chain_end_;  // read_loop waits on it while the handlers read
  bool read_chain_ended_ = false;
  Failure read_chain_failure_;
  std::uint64_t read_chain_ = 0;  // counts read chains: a handler of an earlier one does nothing
  std::unique_ptr<codec::ReplyReader> reader_;
  std::vector<char> read_buffer_;
  Pipeline pipeline_;

  bool writer_waiting_ = false;  // the writer coroutine waits on writer_wakeup_
  bool delivering_ = false;      // the read loop hands out replies; it sends what they cause
  // Why the connection was left on purpose (its server fell silent, or the sentinels named
  // another master), for the read that then fails.
  Failure abandoned_;
  UniqueFunction<void(bool)> connection_observer_;
  std::shared_ptr<Subscriber> subscriber_;  // once per client, on its first connection
  ReconnectSchedule reconnect_;
  // The server this connection reaches: the URL's or, behind Sentinel, the master the sentinels
  // named last (the URL until then).
  RedisUrl server_;
  std::unique_ptr<SentinelDiscovery> discovery_;  // behind Sentinel only
  // The sentinels watched (behind Sentinel, unless a subscriber's connection).
  bool watches_sentinels_ = true;
  std::vector<std::shared_ptr<SentinelWatch>> watches_;
  // The master an event named last when it was not server_, and how many times that happened:
  // a connection made while an event named another master is not trusted.
  std::optional<RedisUrl::Endpoint> named_master_;
  std::uint64_t other_masters_named_ = 0;
  std::optional<int> replicas_known_;
};

}  // namespace leasehold::detail
