// One Redis command, ready to send: its RESP bytes, plus what the transport needs to know about it
// (is it a script call that may need the EVAL fallback, may it be sent again after a lost
// connection). Requests are built by queries; the transport never inspects their arguments.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/detail/request.hpp"

namespace leasehold {

namespace codec {
struct FormattedCommand;  // src/protocol/codec.hpp
}

// A Lua script, identified by the SHA-1 of its body as Redis computes it for EVALSHA.
// Scripts are long-lived constants: a Request refers to its Script, which must outlive it.
class Script {
 public:
  explicit Script(std::string body);

  const std::string& body() const noexcept { return body_; }
  const std::string& sha1() const noexcept { return sha1_; }  // 40 lowercase hex digits

 private:
  std::string body_;
  std::string sha1_;
};

class Request {
 public:
  // A command; args[0] is its name, e.g. {"SET", key, value}.
  static Request command(std::initializer_list<std::string_view> args);
  static Request command(std::span<const std::string_view> args);
  static Request command(std::span<const std::string> args);

  // EVALSHA of script; the transport falls back to EVAL when Redis answers NOSCRIPT.
  static Request script(const Script& script, std::span<const std::string_view> keys,
                        std::span<const std::string_view> args);

  Request() = default;  // no bytes: nothing to send
  Request(const Request& other);
  Request& operator=(const Request& other);
  Request(Request&&) noexcept = default;
  Request& operator=(Request&&) noexcept = default;
  ~Request() = default;

  // A retry-safe request may be sent again after the connection was lost with it in flight (it
  // has the same effect when run twice). Requests are not retry-safe unless they say so.
  Request&& retry_safe(bool safe = true) && {
    retry_safe_ = safe;
    return std::move(*this);
  }
  bool is_retry_safe() const noexcept { return retry_safe_; }

  // A request that grants time on a lease (an acquire, an extend). With
  // ClientOptions::replica_acks, the client has replicas acknowledge it (WAIT) before it counts.
  Request&& grants_lease(bool grants = true) && {
    grants_lease_ = grants;
    return std::move(*this);
  }
  bool is_lease_grant() const noexcept { return grants_lease_; }

  // Where a Redis Cluster keeps the request's keys. Script calls know their keys; a command's
  // builder declares them with for_key() (or without_keys()); a command that declares nothing is
  // `unknown`, and a cluster client asks the server for its keys (COMMAND GETKEYS) before routing.
  //
  // Slots are computed when asked for, not when keys are declared: a key that is one of the
  // request's own arguments (a script's keys, or a for_key() key equal to an argument) is
  // remembered by its position, and its slot read from the formatted bytes by keys() and slot().
  // A single server never asks; a cluster asks once per request (keys_and_slot()).
  enum class Keys : std::uint8_t { unknown, none, one_slot, cross_slot };
  Request&& for_key(std::string_view key) && {
    declare_key(key);
    return std::move(*this);
  }
  Request&& without_keys() && {
    if (keys_ == Keys::unknown)
      keys_ = Keys::none;
    return std::move(*this);
  }
  Keys keys() const noexcept { return keys_and_slot().first; }
  // The slot of the keys when keys() == one_slot (with cross_slot: the first declared key's).
  std::uint16_t slot() const noexcept { return keys_and_slot().second; }
  // keys() and slot() in one pass over the declared keys.
  std::pair<Keys, std::uint16_t> keys_and_slot() const noexcept;

  // Adds `key` to what (keys, slot) say of a request's keys: the rule for_key() applies, for
  // keys learnt elsewhere (a cluster asks the server for a raw command's keys).
  static void add_key(Keys& keys, std::uint16_t& slot, std::string_view key) noexcept;

  // A request whose keys may span slots, given the requests that do its work slot by slot (a
  // script over several names, run once per slot's names): on a Redis Cluster, when its keys
  // span slots, its parts are sent in its place, each to its slot's node, and its reply is an
  // array of their replies in order (each may be an error reply); they may run in any order and
  // are not atomic together. A single server, or keys of one slot, run the request itself.
  Request&& split_by_slot(std::vector<Request> parts) &&;
  std::span<const Request> parts() const noexcept;
  // True if a cluster sends its parts in its place.
  bool sent_in_parts_on_cluster() const noexcept {
    return parts_ != nullptr && keys() == Keys::cross_slot;
  }

  // A request whose keys depend on the topology: a Redis Cluster sends `form` in its place (or
  // the form's parts, when they are sent in its place), with this request's retry_safe() and
  // grants_lease(); a single server sends this request. Both must answer alike. (A fenced grant
  // counts on the server's one fence counter, on a cluster on its slot's.)
  Request&& on_cluster_as(Request form) &&;
  bool has_cluster_form() const noexcept { return cluster_form_ != nullptr; }
  // What a cluster sends: on_cluster_as()'s form, or this request.
  const Request& cluster_form() const noexcept {
    return cluster_form_ != nullptr ? *cluster_form_ : *this;
  }

  // The RESP bytes, as hiredis formatted them (held in the buffer hiredis made: no copy).
  std::string_view bytes() const noexcept { return {bytes_.get(), size_}; }
  bool is_script() const noexcept { return script_ != nullptr; }
  const Script* script() const noexcept { return script_; }  // a script call's; else null

  // The same script call as EVAL with the script's body: sent when Redis answered NOSCRIPT.
  Request eval_fallback() const;
  // The same script call made to `other` (EVALSHA, keys and arguments unchanged): a script that
  // does the same with what an older server knows.
  Request calling(const Script& other) const;

 private:
  // Takes over a command that hiredis formatted (its buffer is freed with the request).
  static Request from_formatted(codec::FormattedCommand formatted) noexcept;
  // This script call with `verb` and `script` in place of EVALSHA and its digest.
  Request with_call_head(std::string_view verb, std::string_view script) const;

  std::unique_ptr<char, detail::FreeRequestBytes> bytes_;
  std::size_t size_ = 0;
  const Script* script_ = nullptr;  // for the EVAL fallback, which rereads the rest from bytes_
  void declare_key(std::string_view key) noexcept;

  std::shared_ptr<const std::vector<Request>> parts_;  // split_by_slot's; shared, never changed
  std::shared_ptr<const Request> cluster_form_;        // on_cluster_as's; shared, never changed
  bool retry_safe_ = false;
  bool grants_lease_ = false;
  // The declared keys are, in their order: the arguments [key_first_, key_first_ + key_count_) of
  // the command (args[0] is its name), whose slots are computed when asked for; then the keys
  // that are not arguments (or came after one that was not), whose slots were computed when
  // declared, summed up in (keys_, slot_). keys_ is `none` when every declared key is an argument.
  Keys keys_ = Keys::unknown;
  std::uint8_t key_first_ = 0;
  std::uint16_t slot_ = 0;
  std::uint16_t key_count_ = 0;
};

}  // namespace leasehold
