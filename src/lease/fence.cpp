#include "leasehold/fence.hpp"

#include <charconv>

#include "lease_scripts.hpp"

namespace leasehold {
namespace {

const Script& fenced_write_script() {
  // The script's contract is in src/lease/scripts/fenced_write.lua.
  static const Script script{std::string(detail::lua::fenced_write)};
  return script;
}

FencedWrite fenced_write(std::span<const std::string_view> keys,
                         std::span<const std::string_view> args) {
  return FencedWrite(Request::script(fenced_write_script(), keys, args));
}

std::optional<std::uint64_t> fence_in(const Reply& reply) {
  std::uint64_t fence = 0;
  const char* end = reply.str.data() + reply.str.size();
  const auto [at, error] = std::from_chars(reply.str.data(), end, fence);
  if (reply.type != Reply::Type::string || error != std::errc() || at != end)
    return std::nullopt;
  return fence;
}

}  // namespace

Result<FenceVerdict> FencedWrite::parse(Reply reply, const Timing&) const {
  if (reply.is_error())
    return error_result<FenceVerdict>(reply);
  if (reply.type == Reply::Type::array && reply.elements.size() == 2 &&
      reply.elements[0].type == Reply::Type::integer)
    if (const auto newest = fence_in(reply.elements[1]))
      return FenceVerdict{reply.elements[0].integer == 1, *newest};
  return Result<FenceVerdict>(make_error_code(errc::unexpected_reply), to_string(reply));
}

std::string fence_record_key(std::string_view key) {
  return same_slot_key(key, ":fence");
}

FencedWrite fenced_set(std::string_view key, std::string_view value, std::uint64_t fence) {
  const std::string record = fence_record_key(key);
  const std::string presented = std::to_string(fence);
  const std::string_view keys[] = {record, key};
  const std::string_view args[] = {presented, "set", value};
  return fenced_write(keys, args);
}

FencedWrite fenced_hset(std::string_view key, std::uint64_t fence,
                        const std::vector<std::pair<std::string, std::string>>& fields,
                        std::string_view fence_field) {
  if (fence_field.empty())
    throw Error(make_error_code(errc::invalid_argument), "the fence field's name is empty");
  const std::string presented = std::to_string(fence);
  std::vector<std::string_view> args{presented, "hset", fence_field};
  for (const auto& [field, value] : fields) {
    if (field == fence_field)
      throw Error(make_error_code(errc::invalid_argument),
                  "fenced_hset: the field '" + field + "' holds the hash's fence; name another");
    args.push_back(field);
    args.push_back(value);
  }
  const std::string_view keys[] = {key};
  return fenced_write(keys, args);
}

std::string FenceRecords::key(std::string_view resource) const {
  if (resource.empty())
    throw Error(make_error_code(errc::invalid_argument),
                "a fenced resource's name is empty; name what the fence protects");
  std::string key;
  key.reserve(prefix_.size() + 7 + resource.size());
  key.append(prefix_).append(":Fence:").append(resource);
  return key;
}

FencedWrite FenceRecords::check(std::string_view resource, std::uint64_t fence) const {
  const std::string record = key(resource);
  const std::string presented = std::to_string(fence);
  const std::string_view keys[] = {record};
  const std::string_view args[] = {presented, "check"};
  return fenced_write(keys, args);
}

}  // namespace leasehold
