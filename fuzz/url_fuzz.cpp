// RedisUrl::parse on any text: a URL comes from a flag, an environment variable or a
// configuration file.
//
// Checks:
//   - the throwing parse() and the one with an error_code agree, and a failure is invalid_url;
//   - a URL that parses is written by to_string() as a URL that parses to the same value, but
//     for its passwords, which to_string() masks as "***" (when its user, master name, sentinel
//     user and hosts hold none of the characters to_string() writes as they are but the parser
//     reads as delimiters: to_string() is for logs and does not %-escape);
//   - node() of each seed is a redis:// URL to that seed that parses back the same;
//   - mask_password() hides a password that the URL spells out once.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "leasehold/error.hpp"
#include "leasehold/url.hpp"

namespace {

using leasehold::RedisUrl;

// Whether to_string() writes `text` so that it reads back as the same: no delimiter of the URL
// syntax, no %-escape.
bool plain(std::string_view text) {
  return text.find_first_of(":@/?&=%,[]") == std::string_view::npos;
}

// A host is written as it is, or in brackets when it holds a ':': one that holds a bracket itself
// ("[[1]" gives "[1") does not read back.
bool plain_host(std::string_view host) {
  return host.find_first_of("[]") == std::string_view::npos;
}

bool renders_faithfully(const RedisUrl& url) {
  if (!plain(url.user) || !plain(url.master_name) || !plain(url.sentinel_user) ||
      !plain_host(url.host))
    return false;
  for (const RedisUrl::Endpoint& seed : url.seeds)
    if (!plain_host(seed.host))
      return false;
  // A unix socket's path is written as it is, after "unix://": it holds no '?' (the query was
  // split off first).
  return true;
}

// What to_string() keeps of a URL: its passwords are masked.
RedisUrl masked(RedisUrl url) {
  url.password = url.has_password ? "***" : "";
  url.sentinel_password = url.has_sentinel_password ? "***" : "";
  return url;
}

// The fields of two URLs that differ, or "" when they are equal.
std::string differences(const RedisUrl& a, const RedisUrl& b) {
  std::string out;
  const auto field = [&](const char* name, bool same) {
    if (!same)
      out += std::string(" ") + name;
  };
  field("transport", a.transport == b.transport);
  field("host", a.host == b.host);
  field("port", a.port == b.port);
  field("seeds", a.seeds == b.seeds);
  field("path", a.path == b.path);
  field("user", a.user == b.user);
  field("password", a.password == b.password);
  field("has_password", a.has_password == b.has_password);
  field("db", a.db == b.db);
  field("tls", a.tls == b.tls);
  field("master_name", a.master_name == b.master_name);
  field("sentinel_user", a.sentinel_user == b.sentinel_user);
  field("sentinel_password", a.sentinel_password == b.sentinel_password);
  field("has_sentinel_password", a.has_sentinel_password == b.has_sentinel_password);
  field("replica_acks", a.replica_acks == b.replica_acks);
  field("replica_ack_timeout", a.replica_ack_timeout == b.replica_ack_timeout);
  field("compat", a.compat == b.compat);
  return out;
}

std::size_t occurrences(std::string_view text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

// mask_password(text) hides `password` when `text` spells it out, as it is, exactly once.
void check_masked(std::string_view text, const std::string& password) {
  if (password.size() < 3 || text.find('%') != std::string_view::npos ||
      password.find_first_of(":@/?&=*,[]") != std::string::npos || occurrences(text, password) != 1)
    return;
  const std::string hidden = leasehold::mask_password(text);
  LEASEHOLD_FUZZ_CHECK(hidden.find(password) == std::string::npos, hidden);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = leasehold::fuzz::as_text(data, size);
  (void)leasehold::mask_password(text);

  std::error_code ec;
  std::string why;
  const RedisUrl url = RedisUrl::parse(text, ec, &why);
  bool threw = false;
  try {
    (void)RedisUrl::parse(text);
  } catch (const leasehold::Error& e) {
    threw = true;
    LEASEHOLD_FUZZ_CHECK(e.code() == leasehold::errc::invalid_url, e.what());
  }
  LEASEHOLD_FUZZ_CHECK(threw == static_cast<bool>(ec));
  if (ec) {
    LEASEHOLD_FUZZ_CHECK(ec == leasehold::errc::invalid_url);
    LEASEHOLD_FUZZ_CHECK(!why.empty());
    return 0;
  }

  (void)url.address();
  if (url.has_password)
    check_masked(text, url.password);
  if (url.has_sentinel_password)
    check_masked(text, url.sentinel_password);

  const std::string written = url.to_string();
  if (!renders_faithfully(url))
    return 0;
  std::error_code again_ec;
  std::string again_why;
  const RedisUrl again = RedisUrl::parse(written, again_ec, &again_why);
  LEASEHOLD_FUZZ_CHECK(!again_ec, written + ": " + again_why);
  const std::string differ = differences(masked(url), masked(again));
  LEASEHOLD_FUZZ_CHECK(differ.empty(), written + " differs in" + differ);
  LEASEHOLD_FUZZ_CHECK(again.to_string() == written, again.to_string() + " vs " + written);

  for (const RedisUrl::Endpoint& seed : url.seeds) {
    const RedisUrl node = url.node(seed);
    const std::string node_text = node.to_string();
    std::error_code node_ec;
    const RedisUrl parsed = RedisUrl::parse(node_text, node_ec);
    LEASEHOLD_FUZZ_CHECK(!node_ec, node_text);
    LEASEHOLD_FUZZ_CHECK(parsed.transport == RedisUrl::Transport::tcp, node_text);
    LEASEHOLD_FUZZ_CHECK(parsed.host == seed.host && parsed.port == seed.port, node_text);
    LEASEHOLD_FUZZ_CHECK(parsed.tls == url.tls && parsed.db == url.db, node_text);
  }
  return 0;
}
