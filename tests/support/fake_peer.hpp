// An in-process fake Redis server for transport tests, with no redis-server involved.
//
// It listens on a unix socket in a fresh temp directory and serves every connection on one thread
// of its own. It parses what the client sends (RESP arrays of bulk strings) and asks a script what
// to do at each step of each connection: step 0 is the connection being accepted, step i >= 1 the
// i-th command received on it. The script answers with bytes to send (whole, one byte at a time,
// or held back until the next send), by closing the connection, or by stalling it: the peer then
// stops reading and writing but keeps the socket open until close_connections() or its
// destructor. Every command received is logged per connection, and the test waits on the log
// with deadlines (no sleeps).
//
//   FakePeer peer([](const PeerEvent& e) {
//     if (e.step == 4) return PeerAction::close();  // the first call after PING, TIME, HELLO
//     return answer_like_redis(e);
//   });
//   Client client(peer.url(), options);
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace leasehold::testing {

// RESP encoders, for scripting replies.
namespace resp {
std::string status(std::string_view text);                   // +text\r\n
std::string error(std::string_view text);                    // -text\r\n
std::string integer(long long value);                        // :value\r\n
std::string bulk(std::string_view data);                     // $size\r\ndata\r\n
std::string nil();                                           // $-1\r\n
std::string array(const std::vector<std::string>& encoded);  // *n\r\n then the encoded elements
}  // namespace resp

struct PeerEvent {
  std::size_t connection = 0;        // 0 for the first accepted connection, 1 for the next, ...
  std::size_t step = 0;              // 0: just accepted; i >= 1: the i-th command on it
  std::vector<std::string> command;  // the command of a step >= 1, e.g. {"CLIENT", "SETNAME", "x"}
};

struct PeerAction {
  enum class Kind { send, close, stall };

  Kind kind = Kind::send;
  std::string bytes;          // send: written to the client (empty: nothing)
  bool byte_by_byte = false;  // send: one byte at a time, each read by the client before the next
  bool defer = false;         // send: held back; goes out just before the next send that is not

  static PeerAction send(std::string bytes) {
    PeerAction action;
    action.bytes = std::move(bytes);
    return action;
  }
  static PeerAction nothing() { return send({}); }
  static PeerAction close() { return {Kind::close, {}, false, false}; }
  static PeerAction stall() { return {Kind::stall, {}, false, false}; }

  PeerAction&& one_byte_at_a_time() && {
    byte_by_byte = true;
    return std::move(*this);
  }
  PeerAction&& deferred() && {
    defer = true;
    return std::move(*this);
  }
};

using PeerScript = std::function<PeerAction(const PeerEvent&)>;

// What a Redis server would answer, for the commands these tests use: PING, ECHO, AUTH, SELECT,
// CLIENT SETNAME, SET, GET (always nil), INCR (always 1), DEL; an error for anything else.
// Nothing at step 0.
PeerAction answer_like_redis(const PeerEvent& event);

class FakePeer {
 public:
  static constexpr std::chrono::milliseconds kDefaultWait{5000};

  explicit FakePeer(PeerScript script = answer_like_redis);
  ~FakePeer();  // closes every connection, stops its thread, removes its directory
  FakePeer(const FakePeer&) = delete;
  FakePeer& operator=(const FakePeer&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  std::string url() const;  // unix://<socket path>

  // The script for every later step. Runs on the peer's thread.
  void set_script(PeerScript script);
  // Closes every open connection, stalled ones included (the listener stays); returns once done.
  void close_connections();

  std::size_t connections() const;  // accepted so far
  // The commands received so far on one connection, in order.
  std::vector<std::vector<std::string>> commands(std::size_t connection) const;

  // Each returns false if the deadline passed first.
  bool wait_for_connections(std::size_t count,
                            std::chrono::milliseconds timeout = kDefaultWait) const;
  bool wait_for_commands(std::size_t connection, std::size_t count,
                         std::chrono::milliseconds timeout = kDefaultWait) const;
  // Until the connection is closed, by either side.
  bool wait_for_disconnect(std::size_t connection,
                           std::chrono::milliseconds timeout = kDefaultWait) const;

 private:
  struct Connection;
  struct Log {
    std::vector<std::vector<std::string>> commands;
    bool closed = false;
  };

  void run();
  void accept_one(std::vector<std::unique_ptr<Connection>>& open);
  void serve(Connection& connection);
  bool apply(Connection& connection, PeerAction action);
  void close_connection(Connection& connection);
  PeerAction ask(const PeerEvent& event);
  void wake();

  std::string dir_;
  std::string socket_path_;
  int listen_fd_ = -1;
  int wake_read_ = -1;
  int wake_write_ = -1;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  PeerScript script_;
  std::vector<Log> logs_;  // one per accepted connection
  bool stopping_ = false;
  std::size_t close_requests_ = 0;
  std::size_t close_requests_done_ = 0;

  std::thread thread_;
};

}  // namespace leasehold::testing
