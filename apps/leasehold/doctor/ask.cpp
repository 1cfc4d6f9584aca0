// How leasehold doctor asks a server: raw commands whose refusals are replies to judge, not
// failures, and the reading of those replies for messages.
#include <span>
#include <sstream>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

// ask()'s query: every reply, an error reply too, is its result.
class Ask {
 public:
  using result_type = Reply;
  explicit Ask(const std::vector<std::string>& args)
      : request_(Request::command(std::span<const std::string>(args))) {}
  const Request& request() const noexcept { return request_; }
  Result<Reply> parse(Reply reply, const Timing&) const { return reply; }

 private:
  Request request_;
};

}  // namespace

Reply ask(Client& client, const std::vector<std::string>& args) {
  return client.process(Ask(args));
}

bool is_noperm(const Reply& reply) {
  return reply.is_error() && reply.str.starts_with("NOPERM");
}

std::string quoted(const std::string& user) {
  return "'" + user + "'";
}

std::string first_sentence(const std::string& text) {
  const auto stop = text.find(". ");
  std::string sentence = text.substr(0, stop);
  if (!sentence.empty() && sentence.back() == '.')
    sentence.pop_back();
  return sentence;
}

std::string refusal(const std::string& command, const Reply& reply, const std::string& user) {
  if (is_noperm(reply))
    return command + " is not permitted to user " + quoted(user);
  return command + " failed: " + first_sentence(reply.str);
}

std::string url_user(const RedisUrl& url) {
  return url.user.empty() ? std::string("default") : url.user;
}

std::map<std::string, std::string> parse_fields(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    const auto colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string::npos)
      continue;
    fields[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return fields;
}

}  // namespace leasehold::cli::doctor_detail
