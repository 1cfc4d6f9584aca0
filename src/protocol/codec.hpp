// The codec layer: hiredis used only as a pure byte codec. Commands are formatted with
// redisFormatSdsCommandArgv (the same bytes as redisFormatCommandArgv, whose sprintf per argument
// cost about a third of a lock cycle's instructions); replies are parsed by a redisReader that
// builds leasehold::Reply values directly (no intermediate redisReply tree). No sockets here.
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

// One command formatted by hiredis, in the buffer (an sds string) hiredis allocated: free it with
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

// A command's arguments as hiredis takes them, pointers and lengths: on the stack for the usual
// few, on the heap past 16. The arguments must outlive format().
class Arguments {
 public:
  explicit Arguments(std::size_t count) {
    if (count > kOnStack) {
      argv_on_heap_.resize(count);
      lengths_on_heap_.resize(count);
      argv_ = argv_on_heap_.data();
      lengths_ = lengths_on_heap_.data();
    }
  }
  Arguments(const Arguments&) = delete;  // points into itself
  Arguments& operator=(const Arguments&) = delete;

  // Adds the next argument (at most `count` in all).
  void add(std::string_view argument) noexcept {
    argv_[added_] = argument.data();
    lengths_[added_] = argument.size();
    ++added_;
  }
  FormattedCommand format() const { return codec::format(added_, argv_, lengths_); }

 private:
  static constexpr std::size_t kOnStack = 16;
  const char* argv_on_stack_[kOnStack];
  std::size_t lengths_on_stack_[kOnStack];
  std::vector<const char*> argv_on_heap_;
  std::vector<std::size_t> lengths_on_heap_;
  const char** argv_ = argv_on_stack_;
  std::size_t* lengths_ = lengths_on_stack_;
  std::size_t added_ = 0;
};

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
