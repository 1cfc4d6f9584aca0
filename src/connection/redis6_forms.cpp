#include "redis6_forms.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "codec.hpp"
#include "connection_scripts.hpp"

namespace leasehold::detail {
namespace {

bool same_word(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

const Script& set_nx_px_get_script() {
  static const Script script{std::string(lua::set_nx_px_get)};
  return script;
}

// The arguments of `request` when it is SET key value NX PX ttl GET (in any letter case).
std::optional<std::vector<std::string>> set_nx_px_get_args(const Request& request) {
  // Seven arguments, the first SET: only then is the command read back from its bytes.
  constexpr std::string_view kHead = "*7\r\n$3\r\n";
  const std::string_view bytes = request.bytes();
  if (request.is_script() || !bytes.starts_with(kHead) || bytes.size() < kHead.size() + 3 ||
      !same_word(bytes.substr(kHead.size(), 3), "SET"))
    return std::nullopt;
  std::vector<std::string> args = codec::parse_command(bytes);
  if (!same_word(args[3], "NX") || !same_word(args[4], "PX") || !same_word(args[6], "GET"))
    return std::nullopt;
  return args;
}

}  // namespace

bool is_set_nx_px_get(const Request& request) {
  return set_nx_px_get_args(request).has_value();
}

std::optional<std::string> with_plain_publish(std::string body) {
  constexpr std::string_view kSharded = "'SPUBLISH'";
  auto at = body.find(kSharded);
  if (at == std::string::npos)
    return std::nullopt;
  for (; at != std::string::npos; at = body.find(kSharded, at))
    body.replace(at, kSharded.size(), "'PUBLISH'");
  return body;
}

std::optional<Request> Redis6Forms::form_of(const Request& request) {
  if (const Script* script = request.script()) {
    if (const Script* form = without_sharded_publish(*script))
      return request.calling(*form);
    return std::nullopt;
  }
  const std::optional<std::vector<std::string>> args = set_nx_px_get_args(request);
  if (!args)
    return std::nullopt;
  const std::string_view keys[] = {(*args)[1]};
  const std::string_view argv[] = {(*args)[2], (*args)[5]};
  return Request::script(set_nx_px_get_script(), keys, argv)
      .retry_safe(request.is_retry_safe())
      .grants_lease(request.is_lease_grant());
}

const Script* Redis6Forms::script_of(const Request& request) {
  if (const Script* script = request.script()) {
    const Script* form = without_sharded_publish(*script);
    return form != nullptr ? form : script;
  }
  return is_set_nx_px_get(request) ? &set_nx_px_get_script() : nullptr;
}

const Script* Redis6Forms::without_sharded_publish(const Script& script) {
  // By digest, not by address: a script may be destroyed and another made where it was.
  const auto seen = std::find_if(scripts_.begin(), scripts_.end(), [&script](const auto& entry) {
    return entry.first == script.sha1();
  });
  if (seen != scripts_.end())
    return seen->second.get();
  std::unique_ptr<Script> form;
  if (std::optional<std::string> plain = with_plain_publish(script.body()))
    form = std::make_unique<Script>(std::move(*plain));
  scripts_.emplace_back(script.sha1(), std::move(form));
  return scripts_.back().second.get();
}

}  // namespace leasehold::detail
