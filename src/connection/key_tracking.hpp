// The keys one server's subscriber tells of changes to, without any I/O: Redis's tracking of keys
// for client-side caching. A second connection, the tracker, turns tracking on with its
// invalidations redirected to the subscriber connection (CLIENT TRACKING on REDIRECT <id> OPTIN)
// and arms each key by reading it (CLIENT CACHING yes, then EXISTS); the server then sends one
// invalidation (on __redis__:invalidate) at the key's next change, whoever makes it: a write, an
// expiry, an eviction, a delete, a flush. Each invalidation ends the key's tracking, so the key
// is armed again before its watches are told: a change after that arm sends another.
//
// A watch hears `subscribed` once its key is armed (look now: changes before it were not told),
// `message` (payload: the key) after each change, the key armed again, and `unavailable` while
// tracking cannot work (a connection down, the redirect not known yet, a command refused).
//
// The subscriber (Subscriber) sends the commands and makes the deliveries.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/detail/notifications.hpp"

namespace leasehold::detail {

class KeyTracking {
 public:
  // The channel the server sends invalidations on.
  static constexpr std::string_view kInvalidations = "__redis__:invalidate";

  struct Command {
    enum class What {
      ask_id,     // subscriber: CLIENT ID (before it subscribes to anything)
      subscribe,  // subscriber: SUBSCRIBE __redis__:invalidate
      enable,     // tracker: CLIENT TRACKING on REDIRECT <redirect> OPTIN
      arm,        // tracker: CLIENT CACHING yes, then EXISTS <key>
    };
    What what;
    std::string key;             // arm
    std::uint64_t redirect = 0;  // enable
    std::uint64_t arm = 0;       // arm: which of the key's arms (its answer names it)
    friend bool operator==(const Command&, const Command&) = default;
  };
  struct Delivery {
    std::shared_ptr<ChannelListener> listener;
    ChannelEvent event;
    std::string key;
  };
  struct Effects {
    std::vector<Command> commands;
    std::vector<Delivery> deliveries;
  };

  std::uint64_t watch(std::string key, ChannelListener listener, Effects& effects);
  void unwatch(std::uint64_t id, Effects& effects);
  // Whether any key is watched: the tracker is needed.
  bool watching() const noexcept { return !keys_.empty(); }

  // The subscriber connection: made (its id is asked for before anything else is sent), its id,
  // the invalidations' subscription confirmed (or refused), lost.
  void on_subscriber_connected(Effects& effects);
  void on_subscriber_id(std::optional<std::uint64_t> id, Effects& effects);
  void on_subscribed(bool confirmed, Effects& effects);
  void on_subscriber_lost(Effects& effects);
  // The tracker connection: made, tracking turned on (for `redirect`) or refused, a key armed
  // (or not), lost.
  void on_tracker_connected(Effects& effects);
  void on_enabled(std::uint64_t redirect, bool enabled, Effects& effects);
  void on_armed(const std::string& key, std::uint64_t which, bool armed, Effects& effects);
  void on_tracker_lost(Effects& effects);
  // An invalidation: these keys changed; none: every key did (a flush).
  void on_invalidated(const std::optional<std::vector<std::string>>& keys, Effects& effects);

  // Whether invalidations reach the subscriber for keys armed now.
  bool ready() const noexcept;

 private:
  enum class KeyState { idle, arming, armed };
  struct Key {
    KeyState state = KeyState::idle;
    bool told = false;       // its watches heard `subscribed` since they last heard `unavailable`
    bool changed = false;    // invalidated while arming: armed once more before it is told
    std::uint64_t arms = 0;  // arms sent: only the latest one's answer counts
    std::map<std::uint64_t, std::shared_ptr<ChannelListener>> listeners;
  };
  enum class Subscription { none, subscribing, subscribed, refused };
  enum class Tracking { off, enabling, on, refused };

  void arm(const std::string& name, Key& key, Effects& effects);
  // Tracking is ready now: enable it (the tracker connected, the redirect known and subscribed).
  void enable_if_possible(Effects& effects);
  // Tracking stopped working: every key told so, and armed again once it works.
  void lose_all(Effects& effects);
  void tell(const Key& key, const std::string& name, ChannelEvent event, Effects& effects) const;

  std::map<std::string, Key, std::less<>> keys_;
  std::map<std::uint64_t, std::string> watches_;  // watch id -> its key
  std::uint64_t next_id_ = 1;
  bool subscriber_connected_ = false;
  std::optional<std::uint64_t> subscriber_id_;
  Subscription subscription_ = Subscription::none;
  bool tracker_connected_ = false;
  Tracking tracking_ = Tracking::off;
  std::uint64_t redirect_ = 0;  // what tracking was turned on (or asked) for
};

}  // namespace leasehold::detail
