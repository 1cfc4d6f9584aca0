// The codec layer: hiredis used only as a pure byte codec. Commands are formatted with
// redisFormatCommandArgv; replies are parsed by a redisReader that builds leasehold::Reply values
// directly (no intermediate redisReply tree). No sockets here.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "leasehold/reply.hpp"

namespace leasehold::codec {

// One command formatted by hiredis, in the buffer hiredis allocated: free it with
// free_formatted().
struct FormattedCommand {
  char* bytes = nullptr;
  std::size_t size = 0;
};
FormattedCommand format(std::span<const std::string_view> args);
FormattedCommand format(std::span<const std::string> args);
// The same, from `count` arguments as hiredis takes them: pointers and lengths.
FormattedCommand format(std::size_t count, const char* const* argv, const std::size_t* lengths);
void free_formatted(char* bytes) noexcept;

// The RESP bytes of one command (args[0] is the command name), as a string.
std::string format_command(std::span<const std::string_view> args);
std::string format_command(std::span<const std::string> args);

// The arguments of a command formatted by format_command (read back by the reply reader: a
// command is an array of bulk strings). Throws std::invalid_argument if `bytes` is not exactly one
// such command.
std::vector<std::string> parse_command(std::string_view bytes);

// Incremental reply parser: feed() bytes as they arrive, then take complete replies with next().
class ReplyReader {
 public:
  ReplyReader();
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  void feed(const char* data, std::size_t size);
  // The next complete reply, nullptr if more bytes are needed. It lives in the reader until the
  // next call (move it out to keep it). On malformed input sets ec to errc::protocol_error (and
  // the reader must be discarded).
  Reply* next(std::error_code& ec);
  // True when nothing is buffered: no unread bytes, no reply partly read.
  bool idle() const;
  // Hiredis' description of the last protocol error.
  std::string error_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::codec
