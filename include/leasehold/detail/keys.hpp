// How names become keys: the checks of a namespace and a prefix, the escaping of a name into a
// hash tag and back, and the keys of a name's waiters.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/error.hpp"
#include "leasehold/slot.hpp"

namespace leasehold::detail {

constexpr bool is_namespace_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// A namespace is 1-64 of [A-Za-z0-9_.-]: it can hold no ':' (which ends it in the key) nor braces
// (cluster hash tags). In a constant expression a bad namespace is a compile error.
constexpr void validate_namespace(std::string_view ns) {
  if (ns.empty() || ns.size() > 64)
    throw Error(make_error_code(errc::invalid_argument),
                "a lock namespace must be 1 to 64 characters long");
  for (char c : ns)
    if (!is_namespace_char(c))
      throw Error(make_error_code(errc::invalid_argument),
                  "a lock namespace may only hold letters, digits, '_', '-' and '.', got '" +
                      std::string(ns) + "'");
}

// A prefix is 1-64 characters without braces, spaces or control characters.
constexpr void validate_prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 64)
    throw Error(make_error_code(errc::invalid_argument),
                "a key prefix must be 1 to 64 characters long");
  for (char c : prefix)
    if (c == '{' || c == '}' || c == ' ' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw Error(make_error_code(errc::invalid_argument),
                  "a key prefix may not hold braces, spaces or control characters");
}

// Names go into a hash tag, so '{' and '}' (and '%', the escape itself) are %-escaped: the tag is
// always the whole "{namespace:name}" and the escaping stays injective.
inline void append_escaped(std::string& out, std::string_view name) {
  for (char c : name) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '{':
        out += "%7B";
        break;
      case '}':
        out += "%7D";
        break;
      default:
        out += c;
    }
  }
}

// "<prefix>:<family>:{<namespace>:<escaped raw name>}<suffix>": a name's key in a family whose
// keys share the name's hash slot (a fenced Lock's, an Election's).
inline std::string tagged_name_key(std::string_view prefix, std::string_view family,
                                   std::string_view ns, std::string_view raw,
                                   std::string_view suffix) {
  std::string key;
  key.reserve(prefix.size() + family.size() + ns.size() + raw.size() + suffix.size() + 8);
  key.append(prefix).append(":").append(family).append(":{").append(ns).append(":");
  append_escaped(key, raw);
  key.append("}").append(suffix);
  return key;
}

// The name in a tagged key "<head><escaped name>}<tail>" whose tail is one of `tails`, %-escaping
// undone; nothing for any other key. The inverse of the kinds' tagged keys, for status tools.
std::optional<std::string> name_in_tagged_key(std::string_view key, std::string_view head,
                                              std::initializer_list<std::string_view> tails);

// A lock key's queue of waiters (a sorted set of their ids by arrival), their tickets (ids by the
// time, in ms at Redis, their place runs out) and the channel on which its releases name the
// first two waiters: all in the slot of the key (see queue.hpp).
inline std::string queue_key(std::string_view lock_key) {
  return same_slot_key(lock_key, ":queue");
}
inline std::string tickets_key(std::string_view lock_key) {
  return same_slot_key(lock_key, ":tickets");
}
inline std::string released_channel(std::string_view lock_key) {
  return same_slot_key(lock_key, ":released");
}
// A lock key's observers (watch.hpp): the hash of the state last announced to them
// (src/lease/scripts/observed.lua), and the channel it is announced on.
inline std::string observed_key(std::string_view lock_key) {
  return same_slot_key(lock_key, ":observed");
}
inline std::string changed_channel(std::string_view lock_key) {
  return same_slot_key(lock_key, ":changed");
}
// The keys of a name's waiters, derived from its lock key.
struct WaitKeys {
  explicit WaitKeys(std::string_view lock_key)
      : queue(queue_key(lock_key)),
        tickets(tickets_key(lock_key)),
        channel(released_channel(lock_key)) {}
  std::string queue;
  std::string tickets;
  std::string channel;
};

}  // namespace leasehold::detail
