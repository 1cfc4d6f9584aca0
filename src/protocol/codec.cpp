#include "codec.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include "leasehold/error.hpp"

namespace leasehold::codec {

namespace {

// Arg: std::string_view or std::string.
template <class Arg>
FormattedCommand format_arguments(std::span<const Arg> args) {
  Arguments arguments(args.size());
  for (const Arg& arg : args)
    arguments.add(arg);
  return arguments.format();
}

std::string as_string(FormattedCommand command) {
  const std::unique_ptr<char, void (*)(char*) noexcept> owned(command.bytes, &free_formatted);
  return std::string(command.bytes, command.size);
}

}  // namespace

FormattedCommand format(std::size_t count, const char* const* argv, const std::size_t* lengths) {
  sds out = nullptr;
  // hiredis' prototype takes `const char**`; it only reads the array.
  const int length = redisFormatSdsCommandArgv(&out, static_cast<int>(count),
                                               const_cast<const char**>(argv), lengths);
  if (length < 0 || out == nullptr)
    throw std::bad_alloc();
  return {out, static_cast<std::size_t>(length)};
}

FormattedCommand format(std::span<const std::string_view> args) {
  return format_arguments(args);
}

FormattedCommand format(std::span<const std::string> args) {
  return format_arguments(args);
}

void free_formatted(char* bytes) noexcept {
  redisFreeSdsCommand(bytes);
}

std::string format_command(std::span<const std::string_view> args) {
  return as_string(format(args));
}

std::string format_command(std::span<const std::string> args) {
  return as_string(format(args));
}

namespace {

// An array's count comes from the peer: room for at most this many elements is made up front,
// so that a few bytes ("*2147483647\r\n") cannot ask for gigabytes. Larger arrays grow as their
// elements arrive.
constexpr std::size_t kElementsReserved = 1024;

// hiredis calls these to build each reply node. The root goes into the reader's one slot (its
// privdata), which next() hands out until the next reply: no allocation per reply. A child lives
// inside its parent's `elements`, appended in order (hiredis reads an array's elements one after
// the other, and a nested array whole before its next sibling, so that growing the parent moves
// only finished children).
Reply* place(const redisReadTask* task, Reply&& value) {
  if (task->parent != nullptr) {
    auto* parent = static_cast<Reply*>(task->parent->obj);
    const auto index = static_cast<std::size_t>(task->idx);
    if (index >= parent->elements.size())
      parent->elements.resize(index + 1);
    Reply& slot = parent->elements[index];
    slot = std::move(value);
    return &slot;
  }
  auto* root = static_cast<Reply*>(task->privdata);
  *root = std::move(value);
  return root;
}

void* create_string(const redisReadTask* task, char* str, size_t len) {
  std::string text(str, len);
  switch (task->type) {
    case REDIS_REPLY_ERROR:
      return place(task, Reply::make_error(std::move(text)));
    case REDIS_REPLY_STATUS:
      return place(task, Reply::make_status(std::move(text)));
    default:
      return place(task, Reply::make_string(std::move(text)));
  }
}

void* create_array(const redisReadTask* task, int elements) {
  std::vector<Reply> children;
  children.reserve(std::min(static_cast<std::size_t>(elements), kElementsReserved));
  return place(task, Reply::make_array(std::move(children)));
}

void* create_integer(const redisReadTask* task, long long value) {
  return place(task, Reply::make_integer(value));
}

void* create_nil(const redisReadTask* task) {
  return place(task, Reply::make_nil());
}

// hiredis frees only roots (a reply abandoned by an error, or by the reader's end): the slot.
void free_object(void* root) {
  *static_cast<Reply*>(root) = Reply{};
}

redisReplyObjectFunctions reply_functions = {create_string, create_array, create_integer,
                                             create_nil, free_object};

}  // namespace

struct ReplyReader::Impl {
  redisReader* reader = nullptr;
  Reply root;  // the reply being read (see place())
};

ReplyReader::ReplyReader() : impl_(std::make_unique<Impl>()) {
  impl_->reader = redisReaderCreateWithFunctions(&reply_functions);
  if (impl_->reader == nullptr)
    throw std::bad_alloc();
  impl_->reader->privdata = &impl_->root;
  impl_->reader->maxbuf = 0;  // keep the buffer: no shrinking/regrowing on every large read
}

ReplyReader::~ReplyReader() {
  redisReaderFree(impl_->reader);
}

void ReplyReader::feed(const char* data, std::size_t size) {
  if (redisReaderFeed(impl_->reader, data, size) != REDIS_OK)
    throw std::bad_alloc();
}

Reply* ReplyReader::next(std::error_code& ec) {
  void* raw = nullptr;
  if (redisReaderGetReply(impl_->reader, &raw) != REDIS_OK) {
    ec = make_error_code(errc::protocol_error);
    return nullptr;
  }
  return static_cast<Reply*>(raw);  // the root slot, or nullptr
}

bool ReplyReader::idle() const {
  // A reader asked for a reply with nothing left to read has begun one: its first task is set
  // up, its type not yet read (-1).
  const redisReader& reader = *impl_->reader;
  const bool no_reply_begun =
      reader.ridx == -1 || (reader.ridx == 0 && reader.rstack[0].type == -1);
  return no_reply_begun && reader.pos == reader.len;
}

std::string ReplyReader::error_text() const {
  return impl_->reader->errstr;
}

std::vector<std::string> parse_command(std::string_view bytes) {
  ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  std::error_code ec;
  Reply* command = reader.next(ec);
  if (ec || !command || command->type != Reply::Type::array || !reader.idle())
    throw std::invalid_argument("leasehold: not one formatted command");
  std::vector<std::string> args;
  args.reserve(command->elements.size());
  for (Reply& arg : command->elements) {
    if (arg.type != Reply::Type::string)
      throw std::invalid_argument("leasehold: not one formatted command");
    args.push_back(std::move(arg.str));
  }
  return args;
}

}  // namespace leasehold::codec
