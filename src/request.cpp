#include "leasehold/request.hpp"

#include <openssl/evp.h>

#include <stdexcept>

#include "codec.hpp"

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

Request make_script_call(std::string_view verb, std::string_view script_ref,
                         const std::vector<std::string>& script_args) {
  std::vector<std::string_view> argv;
  argv.reserve(script_args.size() + 2);
  argv.push_back(verb);
  argv.push_back(script_ref);
  argv.insert(argv.end(), script_args.begin(), script_args.end());
  return Request::command(std::span<const std::string_view>(argv));
}

}  // namespace

Script::Script(std::string body) : body_(std::move(body)), sha1_(sha1_hex(body_)) {}

Request Request::command(std::initializer_list<std::string_view> args) {
  return command(std::span<const std::string_view>(args.begin(), args.size()));
}

Request Request::command(std::span<const std::string_view> args) {
  Request request;
  request.bytes_ = codec::format_command(args);
  return request;
}

Request Request::command(std::span<const std::string> args) {
  Request request;
  request.bytes_ = codec::format_command(args);
  return request;
}

Request Request::script(const Script& script, std::span<const std::string_view> keys,
                        std::span<const std::string_view> args) {
  std::vector<std::string> script_args;
  script_args.reserve(keys.size() + args.size() + 1);
  script_args.push_back(std::to_string(keys.size()));
  script_args.insert(script_args.end(), keys.begin(), keys.end());
  script_args.insert(script_args.end(), args.begin(), args.end());
  Request request = make_script_call("EVALSHA", script.sha1(), script_args);
  request.script_ = &script;
  request.script_args_ = std::move(script_args);
  return request;
}

Request Request::eval_fallback() const {
  if (script_ == nullptr)
    return *this;
  Request request = make_script_call("EVAL", script_->body(), script_args_);
  request.retry_safe_ = retry_safe_;
  return request;
}

}  // namespace leasehold
