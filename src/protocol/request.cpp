#include "leasehold/request.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
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

// The arguments of a command as hiredis formats it: "*<count>\r\n", then "$<length>\r\n<bytes>\r\n"
// for each. Only ever given a Request's own bytes.
class ArgumentReader {
 public:
  explicit ArgumentReader(std::string_view bytes) noexcept
      : bytes_(bytes), at_(std::min(bytes.find('\n'), bytes.size())) {
    ++at_;
  }

  // The next argument; false after the last.
  bool next(std::string_view& argument) noexcept {
    if (at_ >= bytes_.size() || bytes_[at_] != '$')
      return false;
    std::size_t length = 0;
    std::size_t at = at_ + 1;
    for (; at < bytes_.size() && bytes_[at] != '\r'; ++at)
      length = length * 10 + static_cast<std::size_t>(bytes_[at] - '0');
    at += 2;
    if (at > bytes_.size() || length > bytes_.size() - at)
      return false;
    argument = bytes_.substr(at, length);
    at_ = at + length + 2;
    return true;
  }

 private:
  std::string_view bytes_;
  std::size_t at_;
};

// Adds a key's slot to what (keys, slot) say of a request's keys.
void add_slot(Request::Keys& keys, std::uint16_t& slot, std::uint16_t key_in) noexcept {
  if (keys == Request::Keys::unknown || keys == Request::Keys::none) {
    keys = Request::Keys::one_slot;
    slot = key_in;
  } else if (keys == Request::Keys::one_slot && key_in != slot) {
    keys = Request::Keys::cross_slot;
  }
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

Request Request::from_formatted(codec::FormattedCommand formatted) noexcept {
  Request request;
  request.bytes_ = {formatted.bytes, detail::FreeRequestBytes{&codec::free_formatted}};
  request.size_ = formatted.size;
  return request;
}

Request Request::command(std::span<const std::string_view> args) {
  return from_formatted(codec::format(args));
}

Request Request::command(std::span<const std::string> args) {
  return from_formatted(codec::format(args));
}

Request::Request(const Request& other)
    : size_(other.size_),
      script_(other.script_),
      parts_(other.parts_),
      cluster_form_(other.cluster_form_),
      retry_safe_(other.retry_safe_),
      grants_lease_(other.grants_lease_),
      keys_(other.keys_),
      key_first_(other.key_first_),
      slot_(other.slot_),
      key_count_(other.key_count_) {
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
  // EVALSHA sha1 numkeys keys... args..., handed to hiredis as pointers and lengths.
  const detail::DecimalDigits numkeys(static_cast<long long>(keys.size()));
  codec::Arguments arguments(3 + keys.size() + args.size());
  arguments.add("EVALSHA");
  arguments.add(script.sha1());
  arguments.add(numkeys.view());
  for (std::string_view key : keys)
    arguments.add(key);
  for (std::string_view arg : args)
    arguments.add(arg);
  Request request = from_formatted(arguments.format());
  request.script_ = &script;
  // The keys are arguments 3 and on: their slots are computed if a cluster asks.
  request.keys_ = Keys::none;
  if (keys.size() <= std::numeric_limits<decltype(request.key_count_)>::max()) {
    request.key_first_ = 3;
    request.key_count_ = static_cast<std::uint16_t>(keys.size());
  } else {
    for (std::string_view key : keys)
      add_key(request.keys_, request.slot_, key);
  }
  return request;
}

Request Request::eval_fallback() const {
  if (script_ == nullptr)
    return *this;
  Request request = with_call_head("EVAL", script_->body());
  request.script_ = nullptr;
  return request;
}

Request Request::calling(const Script& other) const {
  if (script_ == nullptr)
    return *this;
  Request request = with_call_head("EVALSHA", other.sha1());
  request.script_ = &other;
  return request;
}

Request Request::with_call_head(std::string_view verb, std::string_view script) const {
  // A script call keeps no copy of its arguments for these rare cases: numkeys, the keys and the
  // arguments are read back from its own bytes (everything after EVALSHA and the digest).
  const std::vector<std::string> call = codec::parse_command(bytes());
  std::vector<std::string_view> argv;
  argv.reserve(call.size());
  argv.push_back(verb);
  argv.push_back(script);
  argv.insert(argv.end(), call.begin() + 2, call.end());
  Request request = command(std::span<const std::string_view>(argv));
  request.retry_safe_ = retry_safe_;
  request.grants_lease_ = grants_lease_;
  // The keys keep their positions: only the first two arguments differ.
  request.keys_ = keys_;
  request.key_first_ = key_first_;
  request.slot_ = slot_;
  request.key_count_ = key_count_;
  return request;
}

Request&& Request::split_by_slot(std::vector<Request> parts) && {
  parts_ = parts.empty() ? nullptr : std::make_shared<const std::vector<Request>>(std::move(parts));
  return std::move(*this);
}

Request&& Request::on_cluster_as(Request form) && {
  cluster_form_ = std::make_shared<const Request>(std::move(form));
  return std::move(*this);
}

std::span<const Request> Request::parts() const noexcept {
  if (parts_ == nullptr)
    return {};
  return *parts_;
}

void Request::add_key(Keys& keys, std::uint16_t& slot, std::string_view key) noexcept {
  add_slot(keys, slot, key_slot(key));
}

void Request::declare_key(std::string_view key) noexcept {
  if (keys_ != Keys::one_slot && keys_ != Keys::cross_slot) {
    // Every key so far is an argument: if this one is the argument right after them (or, for
    // the first key, any argument), it is remembered by its position.
    ArgumentReader arguments(bytes());
    std::string_view argument;
    for (std::size_t index = 0; arguments.next(argument); ++index) {
      const std::size_t next = std::size_t{key_first_} + key_count_;
      if (key_count_ > 0 && index < next)
        continue;
      if (key_count_ > 0 && index > next)
        break;
      if (argument != key)
        continue;
      if (key_count_ == 0 && index > std::numeric_limits<decltype(key_first_)>::max())
        break;
      if (key_count_ == std::numeric_limits<decltype(key_count_)>::max())
        break;
      if (key_count_ == 0)
        key_first_ = static_cast<std::uint8_t>(index);
      ++key_count_;
      keys_ = Keys::none;
      return;
    }
  }
  // Not an argument (or after one that was not): its slot now, in declaration order.
  add_key(keys_, slot_, key);
}

std::pair<Request::Keys, std::uint16_t> Request::keys_and_slot() const noexcept {
  if (key_count_ == 0)
    return {keys_, slot_};
  Keys keys = Keys::none;
  std::uint16_t slot = 0;
  ArgumentReader arguments(bytes());
  std::string_view argument;
  const std::size_t end = std::size_t{key_first_} + key_count_;
  for (std::size_t index = 0; index < end && arguments.next(argument); ++index) {
    if (index >= key_first_)
      add_key(keys, slot, argument);
  }
  // Then the keys whose slots were computed when they were declared.
  if (keys_ == Keys::one_slot || keys_ == Keys::cross_slot) {
    add_slot(keys, slot, slot_);
    if (keys_ == Keys::cross_slot)
      keys = Keys::cross_slot;
  }
  return {keys, slot};
}

}  // namespace leasehold
