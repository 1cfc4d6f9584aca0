#include "leasehold/slot.hpp"

#include <vector>

namespace leasehold {
namespace {

// For each slot, the first decimal number whose slot it is: a tag that puts a key there.
const std::vector<std::string>& tags_by_slot() {
  static const std::vector<std::string> tags = [] {
    std::vector<std::string> by_slot(kClusterSlots);
    std::size_t found = 0;
    for (unsigned n = 0; found < kClusterSlots; ++n) {
      std::string tag = std::to_string(n);
      std::string& entry = by_slot[key_slot(tag)];
      if (entry.empty()) {
        entry = std::move(tag);
        ++found;
      }
    }
    return by_slot;
  }();
  return tags;
}

}  // namespace

std::string same_slot_key(std::string_view key, std::string_view suffix) {
  std::string out;
  if (hash_tag(key) != key) {  // a tagged key: the same tag
    out.reserve(key.size() + suffix.size());
    out.append(key).append(suffix);
  } else if (!key.empty() && key.find_first_of("{}") == std::string_view::npos) {
    // The key itself as the tag, after the name: the name still starts with the key (and its
    // prefix, which ACL key patterns match).
    out.reserve(2 * key.size() + suffix.size() + 2);
    out.append(key).append(suffix).append("{").append(key).append("}");
  } else {
    // Braces in the key would end a tag early: they are escaped (and '%', so that no two keys
    // give one name), and a short tag of the key's slot ends the name.
    const std::string& tag = tags_by_slot()[key_slot(key)];
    out.reserve(key.size() + suffix.size() + tag.size() + 8);
    for (const char c : key) {
      if (c == '{')
        out.append("%7B");
      else if (c == '}')
        out.append("%7D");
      else if (c == '%')
        out.append("%25");
      else
        out.push_back(c);
    }
    out.append(suffix).append("{").append(tag).append("}");
  }
  return out;
}

std::string same_slot_tag(std::string_view key) {
  std::string_view tag = hash_tag(key);
  if (tag == key && (key.empty() || key.find_first_of("{}") != std::string_view::npos))
    tag = tags_by_slot()[key_slot(key)];
  std::string out;
  out.reserve(tag.size() + 2);
  out.append("{").append(tag).append("}");
  return out;
}

std::string per_slot_key(std::string_view base, std::string_view key) {
  const std::string& tag = tags_by_slot()[key_slot(key)];
  std::string out;
  out.reserve(base.size() + tag.size() + 2);
  out.append(base).append("{").append(tag).append("}");
  return out;
}

}  // namespace leasehold
