// The RESP reply reader (codec::ReplyReader, what every connection reads a server's bytes with)
// on any bytes, and parse_command() (a formatted command read back).
//
// Checks:
//   - the bytes fed at once, and fed in pieces of 1 to 8 bytes, give the same replies and the
//     same verdict (malformed or not);
//   - each reply, written back as RESP, reads as exactly that reply and leaves the reader idle;
//   - a command parse_command() accepts, formatted again, parses to the same arguments;
//     parse_command() throws nothing but std::invalid_argument.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "codec.hpp"
#include "fuzz_support.hpp"
#include "leasehold/error.hpp"
#include "leasehold/reply.hpp"

namespace {

using leasehold::Reply;
using leasehold::codec::ReplyReader;

constexpr std::size_t kMaxReplies = 256;

struct Read {
  std::vector<Reply> replies;
  bool malformed = false;
};

// Takes what `reader` holds now into `read`; false once it is malformed or full.
bool drain(ReplyReader& reader, Read& read) {
  while (read.replies.size() < kMaxReplies) {
    std::error_code ec;
    Reply* reply = reader.next(ec);
    if (ec) {
      LEASEHOLD_FUZZ_CHECK(ec == leasehold::errc::protocol_error);
      LEASEHOLD_FUZZ_CHECK(!reader.error_text().empty());
      read.malformed = true;
      return false;
    }
    if (reply == nullptr)
      return true;
    read.replies.push_back(std::move(*reply));
  }
  return false;
}

Read read_at_once(std::string_view bytes) {
  Read read;
  ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  drain(reader, read);
  return read;
}

Read read_in_pieces(std::string_view bytes) {
  Read read;
  ReplyReader reader;
  std::size_t piece = 1;
  while (!bytes.empty()) {
    const std::size_t n = std::min(piece, bytes.size());
    reader.feed(bytes.data(), n);
    bytes.remove_prefix(n);
    piece = piece % 8 + 1;
    if (!drain(reader, read))
      break;
  }
  return read;
}

void check_written_back(const Reply& reply) {
  const std::string bytes = leasehold::fuzz::resp(reply);
  ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  std::error_code ec;
  Reply* again = reader.next(ec);
  LEASEHOLD_FUZZ_CHECK(!ec, reader.error_text());
  LEASEHOLD_FUZZ_CHECK(again != nullptr, leasehold::to_string(reply));
  LEASEHOLD_FUZZ_CHECK(*again == reply,
                       leasehold::to_string(*again) + " vs " + leasehold::to_string(reply));
  LEASEHOLD_FUZZ_CHECK(reader.idle());
  (void)leasehold::to_string(reply);
  if (reply.is_error())
    (void)leasehold::classify_error_reply(reply.str);
}

void check_command(std::string_view bytes) {
  std::vector<std::string> args;
  try {
    args = leasehold::codec::parse_command(bytes);
  } catch (const std::invalid_argument&) {
    return;
  }
  const std::string formatted = leasehold::codec::format_command(args);
  LEASEHOLD_FUZZ_CHECK(leasehold::codec::parse_command(formatted) == args, formatted);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = leasehold::fuzz::as_text(data, size);
  const Read whole = read_at_once(bytes);
  const Read pieces = read_in_pieces(bytes);
  LEASEHOLD_FUZZ_CHECK(whole.replies == pieces.replies);
  if (whole.replies.size() < kMaxReplies)
    LEASEHOLD_FUZZ_CHECK(whole.malformed == pieces.malformed);
  for (const Reply& reply : whole.replies)
    check_written_back(reply);
  check_command(bytes);
  return 0;
}
