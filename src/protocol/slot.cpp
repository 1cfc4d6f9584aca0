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
  if (hash_tag(key) != key) {
    out.reserve(key.size() + suffix.size());
    out.append(key).append(suffix);
  } else if (!key.empty() && key.find('}') == std::string_view::npos) {
    out.reserve(key.size() + suffix.size() + 2);
    out.append("{").append(key).append("}").append(suffix);
  } else {
    const std::string& tag = tags_by_slot()[key_slot(key)];
    out.reserve(tag.size() + key.size() + suffix.size() + 2);
    out.append("{").append(tag).append("}").append(key).append(suffix);
  }
  return out;
}

}  // namespace leasehold
