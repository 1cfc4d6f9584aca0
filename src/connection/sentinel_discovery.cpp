#include "sentinel_discovery.hpp"

#include <algorithm>
#include <charconv>

#include "leasehold/request.hpp"

namespace leasehold::detail {
namespace {

// A TCP port written in decimal, all of `text`; nothing otherwise.
std::optional<std::uint16_t> port_of(std::string_view text) {
  unsigned port = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (error != std::errc{} || end != text.data() + text.size() || port == 0 || port > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(port);
}

}  // namespace

SentinelDiscovery::SentinelDiscovery(const RedisUrl& url)
    : master_name_(url.master_name), sends_auth_(url.has_sentinel_password), sentinels_(url.seeds) {
  if (sends_auth_) {
    request_ += url.sentinel_user.empty()
                    ? Request::command({"AUTH", url.sentinel_password}).bytes()
                    : Request::command({"AUTH", url.sentinel_user, url.sentinel_password}).bytes();
  }
  request_ += Request::command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name_}).bytes();
  request_ += Request::command({"SENTINEL", "SENTINELS", master_name_}).bytes();
  request_ += Request::command({"SENTINEL", "REPLICAS", master_name_}).bytes();
  replies_expected_ = sends_auth_ ? 4 : 3;
  watch_request_ = request_;
  watch_request_ += Request::command({"SUBSCRIBE", "+switch-master", "+promoted-slave"}).bytes();
}

std::vector<SentinelDiscovery::Endpoint> SentinelDiscovery::start_round() {
  notes_.clear();
  round_size_ = sentinels_.size();
  answered_ = 0;
  refused_login_ = 0;
  std::vector<Endpoint> order;
  if (last_answered_)
    order.push_back(*last_answered_);
  for (const Endpoint& sentinel : sentinels_)
    if (!last_answered_ || sentinel != *last_answered_)
      order.push_back(sentinel);
  return order;
}

void SentinelDiscovery::asking(const Endpoint& sentinel) {
  asking_ = sentinel;
  replies_.clear();
}

void SentinelDiscovery::note(std::string what) {
  notes_.push_back(asking_.address() + " " + std::move(what));
}

std::optional<SentinelDiscovery::Answer> SentinelDiscovery::on_bytes(codec::ReplyReader& reader) {
  std::error_code parse_error;
  while (replies_.size() < replies_expected_) {
    Reply* reply = reader.next(parse_error);
    if (!reply)
      break;
    replies_.push_back(std::move(*reply));
  }
  if (parse_error) {
    ++answered_;
    note("does not speak the Redis protocol: " + reader.error_text());
    return Answer{};
  }
  if (replies_.size() < replies_expected_)
    return std::nullopt;
  ++answered_;
  std::size_t next = 0;
  if (sends_auth_) {
    const Reply& auth = replies_[next++];
    if (auth.is_error()) {
      ++refused_login_;
      note("refused the URL's sentinel_user and sentinel_password: " + auth.str);
      return Answer{};
    }
  }
  const Reply& address = replies_[next++];
  const Reply& sentinels = replies_[next++];
  const Reply& replicas = replies_[next];
  if (address.is_error()) {
    if (address.str.starts_with("NOAUTH")) {
      ++refused_login_;
      note("wants a password, and the URL gives none: add ?sentinel_password=…");
    } else {
      note("refused SENTINEL GET-MASTER-ADDR-BY-NAME: " + address.str);
    }
    return Answer{};
  }
  if (address.is_nil() || (address.type == Reply::Type::array && address.elements.empty())) {
    note("knows no master named '" + master_name_ + "'");
    return Answer{};
  }
  std::optional<std::uint16_t> port;
  if (address.type == Reply::Type::array && address.elements.size() == 2)
    port = port_of(address.elements[1].str);
  if (!port || address.elements[0].str.empty()) {
    note("answered SENTINEL GET-MASTER-ADDR-BY-NAME with " + to_string(address) +
         "; it may not be a sentinel");
    return Answer{};
  }
  learn_sentinels(sentinels);
  last_answered_ = asking_;
  std::optional<int> replica_count;
  if (replicas.type == Reply::Type::array)
    replica_count = static_cast<int>(replicas.elements.size());
  return Answer{Endpoint{address.elements[0].str, *port}, replica_count};
}

// SENTINEL SENTINELS: one array per other sentinel, of field names and values ("ip", "port", …).
void SentinelDiscovery::learn_sentinels(const Reply& reply) {
  if (reply.type != Reply::Type::array)
    return;  // refused (an ACL may): the list stays as it is
  for (const Reply& sentinel : reply.elements) {
    Endpoint endpoint{"", 0};
    for (std::size_t i = 0; i + 1 < sentinel.elements.size(); i += 2) {
      const std::string& field = sentinel.elements[i].str;
      const std::string& value = sentinel.elements[i + 1].str;
      if (field == "ip") {
        endpoint.host = value;
      } else if (field == "port") {
        endpoint.port = port_of(value).value_or(0);
      }
    }
    if (endpoint.host.empty() || endpoint.port == 0)
      continue;
    if (std::find(sentinels_.begin(), sentinels_.end(), endpoint) == sentinels_.end())
      sentinels_.push_back(std::move(endpoint));
  }
}

// ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"], or
// ["message", "+promoted-slave", "slave <ip>:<port> <ip> <port> @ <name> <old ip> <old port>"].
std::optional<SentinelDiscovery::Endpoint> SentinelDiscovery::switched_master(
    const Reply& push) const {
  if (push.type != Reply::Type::array || push.elements.size() != 3 ||
      push.elements[0].str != "message" || push.elements[2].type != Reply::Type::string)
    return std::nullopt;
  const std::string& event = push.elements[1].str;
  if (event != "+switch-master" && event != "+promoted-slave")
    return std::nullopt;
  std::vector<std::string_view> words;
  std::string_view rest = push.elements[2].str;
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find(' '), rest.size());
    if (end > 0)
      words.push_back(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  // Where the new master's address is.
  std::size_t host = 0;
  if (event == "+switch-master" && words.size() == 5 && words[0] == master_name_)
    host = 3;
  else if (event == "+promoted-slave" && words.size() == 8 && words[0] == "slave" &&
           words[4] == "@" && words[5] == master_name_)
    host = 2;
  const std::optional<std::uint16_t> port = host == 0 ? std::nullopt : port_of(words[host + 1]);
  if (!port)
    return std::nullopt;
  return Endpoint{std::string(words[host]), *port};
}

void SentinelDiscovery::ask_first(const Endpoint& sentinel) {
  if (std::find(sentinels_.begin(), sentinels_.end(), sentinel) == sentinels_.end())
    sentinels_.push_back(sentinel);
  last_answered_ = sentinel;
}

void SentinelDiscovery::unreachable(std::string why) {
  notes_.push_back(std::move(why));
}

Failure SentinelDiscovery::round_failure() const {
  std::string said;
  for (const std::string& note : notes_) {
    if (!said.empty())
      said += "; ";
    said += note;
  }
  if (answered_ == round_size_ && refused_login_ == answered_ && answered_ > 0) {
    return {make_error_code(errc::auth_failed),
            "every sentinel refused to log in: " + said +
                " (the URL's user and password are the data servers'; the sentinels' are "
                "?sentinel_user=…&sentinel_password=…)"};
  }
  return {make_error_code(errc::connect_failed),
          "no sentinel named a master for '" + master_name_ + "': " + said};
}

}  // namespace leasehold::detail
