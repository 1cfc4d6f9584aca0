// Finding the master that Redis Sentinel names, without I/O, as Handshake is a connection's setup
// without it: which sentinels to ask and in what order, what to send one, what its replies mean,
// and why a round in which none named a master failed. The connection asks the sentinels of a
// round one by one (each within a short timeout) until one names a master, then checks with ROLE
// that the server it names is one before trusting it (a sentinel may name a stale master in the
// middle of a failover). The sentinel that answered goes first in the next round, and the
// sentinels it knows of (SENTINEL SENTINELS) join the list.
//
// A connection also watches every sentinel it knows of (each with a SentinelDiscovery of its own):
// the same question, then a subscription to the events that name a new master — +promoted-slave,
// which the sentinel leading a failover sends the moment the replica it promoted reports itself
// a master, and +switch-master, which every sentinel sends when it takes the new master on.
// Correctness never depends on them (a demoted master answers READONLY, and every reconnect asks
// the sentinels again and checks with ROLE); they make a switch known at once rather than when
// Sentinel demotes the old master or the next reconnect asks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec.hpp"
#include "failure.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/url.hpp"

namespace leasehold::detail {

class SentinelDiscovery {
 public:
  using Endpoint = RedisUrl::Endpoint;

  // A sentinel URL: its sentinels, the master's name and the sentinels' credentials.
  explicit SentinelDiscovery(const RedisUrl& url);

  // The sentinels to ask in a new round, in order: the one that answered last first. Starts the
  // round: what it notes is what round_failure() tells.
  std::vector<Endpoint> start_round();

  // What to send a sentinel, in one write: AUTH when the URL gives the sentinels a password,
  // SENTINEL GET-MASTER-ADDR-BY-NAME, SENTINEL SENTINELS, SENTINEL REPLICAS.
  std::string_view request() const noexcept { return request_; }
  // What to send a sentinel a connection watches: request(), then SUBSCRIBE to the two events.
  // Sent in one write, so no switch falls between the answer and the subscription.
  std::string_view watch_request() const noexcept { return watch_request_; }
  // The new master a +switch-master or +promoted-slave message names, if it is one of this URL's
  // master; nothing for any other push or reply.
  std::optional<Endpoint> switched_master(const Reply& push) const;

  // Before the replies of `sentinel` are read.
  void asking(const Endpoint& sentinel);
  // Takes the replies `reader` holds: nothing until each came; then the master's address, or
  // nothing when this sentinel named none (why is noted for the round). Throws nothing.
  struct Answer {
    std::optional<Endpoint> master;
    // How many replicas the sentinel knows the master has, those it thinks down among them (a
    // replica cut off from the sentinels may still be the old master's); nothing when it
    // refused to list them.
    std::optional<int> replicas;
  };
  std::optional<Answer> on_bytes(codec::ReplyReader& reader);
  // The sentinel asked last could not be reached or did not answer in time: `why`, a sentence
  // that names it.
  void unreachable(std::string why);

  // Why the round found no master, naming each sentinel asked and what it said. errc::auth_failed
  // (fatal) when every sentinel that answered refused the URL's sentinel credentials; else
  // connect_failed.
  Failure round_failure() const;

  // `sentinel` (known or not) is asked first in the next round: it told of a switch of master
  // that the others may not know of yet.
  void ask_first(const Endpoint& sentinel);

  // The sentinels known now: the URL's and those they told of.
  const std::vector<Endpoint>& sentinels() const noexcept { return sentinels_; }

 private:
  // Notes what the sentinel asked said, for round_failure().
  void note(std::string what);
  void learn_sentinels(const Reply& reply);

  std::string master_name_;
  std::string request_;
  std::string watch_request_;
  std::size_t replies_expected_;
  bool sends_auth_;
  std::vector<Endpoint> sentinels_;
  std::optional<Endpoint> last_answered_;
  // The round: the sentinel asked, its replies so far, and what each sentinel said.
  Endpoint asking_;
  std::vector<Reply> replies_;
  std::vector<std::string> notes_;
  std::size_t round_size_ = 0;
  std::size_t answered_ = 0;       // sentinels that answered this round
  std::size_t refused_login_ = 0;  // of them, those that refused the credentials
};

}  // namespace leasehold::detail
