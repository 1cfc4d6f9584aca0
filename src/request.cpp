#include "leasehold/request.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "codec.hpp"
#include "leasehold/slot.hpp"

namespace leasehold {
namespace {

std::string sha1_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha1(), nullptr) != 1)
    throw std::runtime_error("leasehold: SHA-1 is unavailable in this OpenSSL build");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

}  // namespace

Script::Script(std::string body) : body_(std::move(body)), sha1_(sha1_hex(body_)) {}

Request Request::command(std::initializer_list<std::string_view> args) {
  return command(std::span<const std::string_view>(args.begin(), args.size()));
}

namespace {

void free_copied(char* bytes) noexcept {
  std::free(bytes);
}

}  // namespace

Request Request::command(std::span<const std::string_view> args) {
  const codec::FormattedCommand formatted = codec::format(args);
  Request request;
  request.bytes_ = {formatted.bytes, detail::FreeRequestBytes{&codec::free_formatted}};
  request.size_ = formatted.size;
  return request;
}

Request Request::command(std::span<const std::string> args) {
  const codec::FormattedCommand formatted = codec::format(args);
  Request request;
  request.bytes_ = {formatted.bytes, detail::FreeRequestBytes{&codec::free_formatted}};
  request.size_ = formatted.size;
  return request;
}

Request::Request(const Request& other)
    : size_(other.size_),
      script_(other.script_),
      retry_safe_(other.retry_safe_),
      grants_lease_(other.grants_lease_),
      keys_(other.keys_),
      slot_(other.slot_) {
  if (other.bytes_) {
    bytes_ = {static_cast<char*>(std::malloc(size_ == 0 ? 1 : size_)),
              detail::FreeRequestBytes{&free_copied}};
    if (!bytes_)
      throw std::bad_alloc();
    std::memcpy(bytes_.get(), other.bytes_.get(), size_);
  }
}

Request& Request::operator=(const Request& other) {
  if (this != &other)
    *this = Request(other);
  return *this;
}

Request Request::script(const Script& script, std::span<const std::string_view> keys,
                        std::span<const std::string_view> args) {
  // EVALSHA sha1 numkeys keys... args...; the views stay on the stack for the usual few keys.
  const detail::DecimalDigits numkeys(static_cast<long long>(keys.size()));
  const std::size_t count = 3 + keys.size() + args.size();
  constexpr std::size_t kOnStack = 16;
  std::array<std::string_view, kOnStack> argv_on_stack;
  std::vector<std::string_view> argv_on_heap;
  std::span<std::string_view> argv(argv_on_stack.data(), std::min(count, kOnStack));
  if (count > kOnStack) {
    argv_on_heap.resize(count);
    argv = argv_on_heap;
  }
  argv[0] = "EVALSHA";
  argv[1] = script.sha1();
  argv[2] = numkeys.view();
  std::copy(keys.begin(), keys.end(), argv.begin() + 3);
  std::copy(args.begin(), args.end(), argv.begin() + 3 + static_cast<std::ptrdiff_t>(keys.size()));
  Request request = command(std::span<const std::string_view>(argv));
  request.script_ = &script;
  request.keys_ = Keys::none;
  for (std::string_view key : keys)
    add_key(request.keys_, request.slot_, key);
  return request;
}

Request Request::eval_fallback() const {
  if (script_ == nullptr)
    return *this;
  // A script call keeps no copy of its arguments for this rare case: numkeys, the keys and the
  // arguments are read back from its own bytes (everything after EVALSHA and the digest).
  const std::vector<std::string> call = codec::parse_command(bytes());
  std::vector<std::string_view> argv;
  argv.reserve(call.size());
  argv.push_back("EVAL");
  argv.push_back(script_->body());
  argv.insert(argv.end(), call.begin() + 2, call.end());
  Request request = command(std::span<const std::string_view>(argv));
  request.retry_safe_ = retry_safe_;
  request.grants_lease_ = grants_lease_;
  request.keys_ = keys_;
  request.slot_ = slot_;
  return request;
}

void Request::add_key(Keys& keys, std::uint16_t& slot, std::string_view key) noexcept {
  const std::uint16_t key_in = key_slot(key);
  if (keys == Keys::unknown || keys == Keys::none) {
    keys = Keys::one_slot;
    slot = key_in;
  } else if (keys == Keys::one_slot && key_in != slot) {
    keys = Keys::cross_slot;
  }
}

}  // namespace leasehold
