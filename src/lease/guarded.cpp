#include "leasehold/guarded.hpp"

#include "lease_scripts.hpp"

namespace leasehold {
namespace {

// Lua's unpack() of a command's arguments is bounded by the interpreter's stack (8 000 values).
constexpr std::size_t kMaxArguments = 4096;

const Script& guarded_script() {
  // The script's contract is in src/lease/scripts/guarded.lua.
  static const Script script{std::string(detail::lua::guarded)};
  return script;
}

std::string_view held_at_form(const detail::LeaseState& lease) {
  const auto held_at = lease.kind ? lease.kind->held_at : detail::LeaseKind::HeldAt::key_value;
  return held_at == detail::LeaseKind::HeldAt::key_value ? "value" : "member";
}

const std::string& held_at_key(const detail::LeaseState& lease) {
  const bool second =
      lease.kind && lease.kind->held_at == detail::LeaseKind::HeldAt::second_key_member;
  return second ? lease.second_key : lease.key;
}

}  // namespace

Guarded::Guarded(std::shared_ptr<const detail::LeaseState> lease) : lease_(std::move(lease)) {
  if (!lease_->more_keys.empty())
    throw Error(make_error_code(errc::invalid_argument),
                "a guarded write checks the lease of one name, and this token holds several (a "
                "lock set): guard the write with a token of one name");
}

Guarded& Guarded::call(std::initializer_list<std::string_view> args) {
  if (args.size() < 2)
    throw Error(make_error_code(errc::invalid_argument),
                "a guarded command needs a name and a key (its first argument); for a command "
                "with other keys or none, use call_touching()");
  keys_.emplace_back(args.begin()[1]);
  add(args.begin(), args.size());
  return *this;
}

Guarded& Guarded::call(const std::vector<std::string>& args) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  if (views.size() < 2)
    return call({views.empty() ? std::string_view() : views[0]});  // the same error
  keys_.emplace_back(views[1]);
  add(views.data(), views.size());
  return *this;
}

Guarded& Guarded::call_touching(const std::vector<std::string>& keys,
                                const std::vector<std::string>& args) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  if (views.empty())
    throw Error(make_error_code(errc::invalid_argument), "a guarded command needs a name");
  keys_.insert(keys_.end(), keys.begin(), keys.end());
  add(views.data(), views.size());
  return *this;
}

void Guarded::add(const std::string_view* args, std::size_t count) {
  if (count > kMaxArguments)
    throw Error(make_error_code(errc::invalid_argument),
                "a guarded command takes at most " + std::to_string(kMaxArguments) +
                    " arguments, got " + std::to_string(count) + "; split it");
  arguments_.push_back(std::to_string(count));
  arguments_.insert(arguments_.end(), args, args + count);
  ++commands_;
}

Request Guarded::request() const {
  std::vector<std::string_view> keys{held_at_key(*lease_)};
  keys.insert(keys.end(), keys_.begin(), keys_.end());
  const std::string count = std::to_string(commands_);
  std::vector<std::string_view> args{held_at_form(*lease_), lease_->value, count};
  args.insert(args.end(), arguments_.begin(), arguments_.end());
  return Request::script(guarded_script(), keys, args);
}

Result<Guarded::result_type> Guarded::parse(Reply reply, const Timing&) const {
  if (reply.is_error())
    return error_result<result_type>(reply);
  if (reply.type != Reply::Type::array || reply.elements.empty() ||
      reply.elements[0].type != Reply::Type::integer)
    return Result<result_type>(make_error_code(errc::unexpected_reply), to_string(reply));
  if (reply.elements[0].integer == 0)
    return result_type{};
  std::vector<Reply> replies(std::make_move_iterator(reply.elements.begin() + 1),
                             std::make_move_iterator(reply.elements.end()));
  return result_type{std::move(replies)};
}

}  // namespace leasehold
