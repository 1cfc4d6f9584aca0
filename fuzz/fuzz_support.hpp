// What the fuzz targets share: an invariant that aborts with a message, RESP bytes read into
// replies (so that a target's seeds are readable replies), and a reply written back as RESP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "codec.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"

namespace leasehold::fuzz {

// An invariant the code under test broke: say which, then abort (libFuzzer saves the input).
[[noreturn]] inline void fail(const char* what, const char* file, int line,
                              const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz invariant violated at %s:%d: %s\n", file, line, what);
  if (!detail.empty())
    std::fprintf(stderr, "  %s\n", detail.c_str());
  std::abort();
}

#define LEASEHOLD_FUZZ_CHECK(condition, ...)                                              \
  do {                                                                                    \
    if (!(condition))                                                                     \
      ::leasehold::fuzz::fail(#condition, __FILE__, __LINE__ __VA_OPT__(, ) __VA_ARGS__); \
  } while (false)

// An outcome parsed from `reply`: an error reply is a failure with classify_error_reply()'s code,
// and any failure has a code.
template <class T>
void check_failure(const Reply& reply, const Result<T>& result) {
  if (reply.is_error()) {
    LEASEHOLD_FUZZ_CHECK(!result);
    LEASEHOLD_FUZZ_CHECK(result.error() == classify_error_reply(reply.str),
                         result.error().message());
  }
  if (!result)
    LEASEHOLD_FUZZ_CHECK(static_cast<bool>(result.error()), to_string(reply));
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The complete replies at the start of `bytes`, at most `limit`, as the connection's reader
// yields them; it stops at the first malformed or incomplete one.
inline std::vector<Reply> read_replies(std::string_view bytes, std::size_t limit = 64) {
  std::vector<Reply> replies;
  codec::ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  std::error_code ec;
  while (replies.size() < limit) {
    Reply* reply = reader.next(ec);
    if (ec || reply == nullptr)
      break;
    replies.push_back(std::move(*reply));
  }
  return replies;
}

// `reply` as a RESP2 server writes it.
inline void append_resp(std::string& out, const Reply& reply) {
  switch (reply.type) {
    case Reply::Type::nil:
      out += "$-1\r\n";
      return;
    case Reply::Type::string:
      out += '$';
      out += std::to_string(reply.str.size());
      out += "\r\n";
      out += reply.str;
      out += "\r\n";
      return;
    case Reply::Type::status:
      out += '+';
      out += reply.str;
      out += "\r\n";
      return;
    case Reply::Type::error:
      out += '-';
      out += reply.str;
      out += "\r\n";
      return;
    case Reply::Type::integer:
      out += ':';
      out += std::to_string(reply.integer);
      out += "\r\n";
      return;
    case Reply::Type::array:
      out += '*';
      out += std::to_string(reply.elements.size());
      out += "\r\n";
      for (const Reply& element : reply.elements)
        append_resp(out, element);
      return;
  }
}

inline std::string resp(const Reply& reply) {
  std::string out;
  append_resp(out, reply);
  return out;
}

}  // namespace leasehold::fuzz
