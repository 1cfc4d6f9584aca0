#include "fake_peer.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <chrono>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "codec.hpp"
#include "leasehold/reply.hpp"

namespace leasehold::testing {

namespace resp {

std::string status(std::string_view text) {
  return "+" + std::string(text) + "\r\n";
}
std::string error(std::string_view text) {
  return "-" + std::string(text) + "\r\n";
}
std::string integer(long long value) {
  return ":" + std::to_string(value) + "\r\n";
}
std::string bulk(std::string_view data) {
  return "$" + std::to_string(data.size()) + "\r\n" + std::string(data) + "\r\n";
}
std::string nil() {
  return "$-1\r\n";
}
std::string array(const std::vector<std::string>& encoded) {
  std::string out = "*" + std::to_string(encoded.size()) + "\r\n";
  for (const std::string& element : encoded)
    out += element;
  return out;
}

}  // namespace resp

namespace {

std::string upper(std::string text) {
  for (char& c : text)
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 'a' + 'A');
  return text;
}

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// Writes all of `bytes`; false if the client is gone.
bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Waits until the client has read everything sent on `fd` (on a unix socket, SIOCOUTQ counts the
// bytes the receiver has not consumed yet), so that the client's next read sees only what comes
// after. Bounded: a client that stops reading only makes the split coarser.
void wait_until_read(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int unread = 0;
  while (::ioctl(fd, SIOCOUTQ, &unread) == 0 && unread > 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
}

std::optional<std::vector<std::string>> as_command(const Reply& reply) {
  if (reply.type != Reply::Type::array || reply.elements.empty())
    return std::nullopt;
  std::vector<std::string> command;
  for (const Reply& element : reply.elements) {
    if (element.type != Reply::Type::string)
      return std::nullopt;
    command.push_back(element.str);
  }
  return command;
}

}  // namespace

PeerAction answer_like_redis(const PeerEvent& event) {
  if (event.step == 0)
    return PeerAction::nothing();
  const std::vector<std::string>& command = event.command;
  const std::string name = upper(command.at(0));
  if (name == "PING")
    return PeerAction::send(command.size() > 1 ? resp::bulk(command[1]) : resp::status("PONG"));
  if (name == "TIME") {  // this host's clock, as a server beside it would answer
    const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    return PeerAction::send(resp::array({resp::bulk(std::to_string(now.count() / 1'000'000)),
                                         resp::bulk(std::to_string(now.count() % 1'000'000))}));
  }
  if (name == "HELLO") {  // the fields the client reads, as Redis 7.0 gives them
    return PeerAction::send(resp::array(
        {resp::bulk("server"), resp::bulk("redis"), resp::bulk("version"), resp::bulk("7.0.0")}));
  }
  if (name == "ECHO" && command.size() == 2)
    return PeerAction::send(resp::bulk(command[1]));
  if (name == "AUTH" || name == "SELECT" || name == "SET" ||
      (name == "CLIENT" && command.size() == 3 && upper(command[1]) == "SETNAME"))
    return PeerAction::send(resp::status("OK"));
  if (name == "GET")
    return PeerAction::send(resp::nil());
  if (name == "INCR")
    return PeerAction::send(resp::integer(1));
  if (name == "DEL")
    return PeerAction::send(resp::integer(0));
  return PeerAction::send(resp::error("ERR unknown command '" + command[0] + "'"));
}

struct FakePeer::Connection {
  int fd = -1;
  std::size_t index = 0;
  std::size_t step = 0;
  bool stalled = false;
  std::string deferred;
  codec::ReplyReader reader;
};

FakePeer::FakePeer(PeerScript script) : script_(std::move(script)) {
  std::string pattern = (std::filesystem::temp_directory_path() / "leasehold-peer-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw_errno("mkdtemp");
  dir_ = pattern;
  socket_path_ = dir_ + "/redis.sock";

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(address.sun_path))
    throw std::runtime_error("the fake peer's socket path is too long: " + socket_path_);
  std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size() + 1);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
    throw_errno("pipe2");
  wake_read_ = pipe_fds[0];
  wake_write_ = pipe_fds[1];

  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0)
    throw_errno("socket");
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
    throw_errno("bind");
  if (::listen(listen_fd_, 64) != 0)
    throw_errno("listen");

  thread_ = std::thread([this] { run(); });
}

FakePeer::~FakePeer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  if (thread_.joinable())
    thread_.join();
  ::close(listen_fd_);
  ::close(wake_read_);
  ::close(wake_write_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string FakePeer::url() const {
  return "unix://" + socket_path_;
}

void FakePeer::set_script(PeerScript script) {
  std::lock_guard lock(mutex_);
  script_ = std::move(script);
}

void FakePeer::close_connections() {
  std::unique_lock lock(mutex_);
  const std::size_t ticket = ++close_requests_;
  lock.unlock();
  wake();
  lock.lock();
  changed_.wait(lock, [&] { return close_requests_done_ >= ticket || stopping_; });
}

std::size_t FakePeer::connections() const {
  std::lock_guard lock(mutex_);
  return logs_.size();
}

std::vector<std::vector<std::string>> FakePeer::commands(std::size_t connection) const {
  std::lock_guard lock(mutex_);
  if (connection >= logs_.size())
    return {};
  return logs_[connection].commands;
}

bool FakePeer::wait_for_connections(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return logs_.size() >= count; });
}

bool FakePeer::wait_for_commands(std::size_t connection, std::size_t count,
                                 std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    return connection < logs_.size() && logs_[connection].commands.size() >= count;
  });
}

bool FakePeer::wait_for_disconnect(std::size_t connection,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout,
                           [&] { return connection < logs_.size() && logs_[connection].closed; });
}

void FakePeer::wake() {
  const char byte = 1;
  while (::write(wake_write_, &byte, 1) < 0 && errno == EINTR) {
  }
}

PeerAction FakePeer::ask(const PeerEvent& event) {
  PeerScript script;
  {
    std::lock_guard lock(mutex_);
    script = script_;
  }
  return script(event);
}

void FakePeer::run() {
  std::vector<std::unique_ptr<Connection>> open;
  for (;;) {
    std::vector<pollfd> fds = {{wake_read_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    std::vector<Connection*> polled;
    for (const auto& connection : open) {
      if (!connection->stalled) {
        fds.push_back({connection->fd, POLLIN, 0});
        polled.push_back(connection.get());
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      ADD_FAILURE() << "fake peer: poll failed: " << std::strerror(errno);
      break;
    }
    if (fds[0].revents != 0) {
      char buffer[64];
      while (::read(wake_read_, buffer, sizeof(buffer)) == sizeof(buffer)) {
      }
      std::unique_lock lock(mutex_);
      if (stopping_)
        break;
      if (close_requests_done_ < close_requests_) {
        const std::size_t requests = close_requests_;
        lock.unlock();
        for (const auto& connection : open)
          close_connection(*connection);
        open.clear();
        lock.lock();
        close_requests_done_ = requests;
        changed_.notify_all();
        continue;  // `polled` points into the connections just closed
      }
    }
    for (std::size_t i = 0; i < polled.size(); ++i)
      if (fds[i + 2].revents != 0)
        serve(*polled[i]);
    if (fds[1].revents != 0)
      accept_one(open);
    std::erase_if(open, [](const auto& connection) { return connection->fd < 0; });
  }
  for (const auto& connection : open)
    close_connection(*connection);
  std::lock_guard lock(mutex_);
  changed_.notify_all();  // close_connections() callers stop waiting
}

void FakePeer::accept_one(std::vector<std::unique_ptr<Connection>>& open) {
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  auto connection = std::make_unique<Connection>();
  connection->fd = fd;
  {
    std::lock_guard lock(mutex_);
    connection->index = logs_.size();
    logs_.emplace_back();
    changed_.notify_all();
  }
  PeerEvent event;
  event.connection = connection->index;
  event.step = 0;
  apply(*connection, ask(event));
  open.push_back(std::move(connection));
}

void FakePeer::serve(Connection& connection) {
  char buffer[64 * 1024];
  const ssize_t n = ::recv(connection.fd, buffer, sizeof(buffer), 0);
  if (n < 0 && errno == EINTR)
    return;
  if (n <= 0) {
    close_connection(connection);  // the client closed it (or reset it)
    return;
  }
  connection.reader.feed(buffer, static_cast<std::size_t>(n));
  for (;;) {
    std::error_code ec;
    Reply* parsed = connection.reader.next(ec);
    if (ec) {
      ADD_FAILURE() << "fake peer: the client sent malformed RESP: "
                    << connection.reader.error_text();
      close_connection(connection);
      return;
    }
    if (!parsed)
      return;
    std::optional<std::vector<std::string>> command = as_command(*parsed);
    if (!command) {
      ADD_FAILURE() << "fake peer: the client sent something that is not a command: "
                    << to_string(*parsed);
      close_connection(connection);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      logs_[connection.index].commands.push_back(*command);
      changed_.notify_all();
    }
    PeerEvent event;
    event.connection = connection.index;
    event.step = ++connection.step;
    event.command = std::move(*command);
    if (!apply(connection, ask(event)))
      return;  // closed or stalled: what else was received stays unanswered
  }
}

bool FakePeer::apply(Connection& connection, PeerAction action) {
  switch (action.kind) {
    case PeerAction::Kind::close:
      close_connection(connection);
      return false;
    case PeerAction::Kind::stall:
      connection.stalled = true;
      return false;
    case PeerAction::Kind::send:
      break;
  }
  if (action.defer) {
    connection.deferred += action.bytes;
    return true;
  }
  std::string bytes = std::move(connection.deferred) + action.bytes;
  connection.deferred.clear();
  bool sent = true;
  if (action.byte_by_byte) {
    for (std::size_t i = 0; sent && i < bytes.size(); ++i) {
      sent = send_all(connection.fd, std::string_view(bytes).substr(i, 1));
      wait_until_read(connection.fd);
    }
  } else {
    sent = send_all(connection.fd, bytes);
  }
  if (!sent) {
    close_connection(connection);
    return false;
  }
  return true;
}

void FakePeer::close_connection(Connection& connection) {
  if (connection.fd < 0)
    return;
  ::close(connection.fd);
  connection.fd = -1;
  connection.stalled = false;
  std::lock_guard lock(mutex_);
  logs_[connection.index].closed = true;
  changed_.notify_all();
}

}  // namespace leasehold::testing
