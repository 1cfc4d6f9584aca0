#include "cluster_router.hpp"

#include <algorithm>

#include "codec.hpp"
#include "leasehold/error.hpp"

namespace leasehold::detail {
namespace {

// An error reply whose first word is `word` ("ASK" is not "ASKING ...").
bool starts_with_word(const Reply& reply, std::string_view word) {
  return reply.is_error() && reply.str.starts_with(word) &&
         (reply.str.size() == word.size() || reply.str[word.size()] == ' ');
}

ReplyVerdict failed(std::error_code error, std::string detail) {
  ReplyVerdict verdict;
  verdict.action = ReplyVerdict::Action::fail;
  verdict.failure = {error, std::move(detail)};
  return verdict;
}

}  // namespace

ReplyVerdict judge_reply(const Reply& reply, const ReplyContext& context) {
  ReplyVerdict verdict;
  if (!reply.is_error())
    return verdict;
  const bool moved = starts_with_word(reply, "MOVED");
  if (moved || starts_with_word(reply, "ASK")) {
    if (!parse_redirection(reply.str, verdict.slot, verdict.target, context.node_host)) {
      return failed(make_error_code(errc::protocol_error),
                    "the cluster node " + std::string(context.node_address) +
                        " sent a malformed redirection: " + reply.str);
    }
    if (context.redirections + 1 > kMaxRedirections) {
      return failed(make_error_code(errc::server_error),
                    "the Redis Cluster at " + std::string(context.cluster_address) +
                        " redirected a call more than " + std::to_string(kMaxRedirections) +
                        " times (last: " + reply.str + "); its slot map keeps changing");
    }
    verdict.action = moved ? ReplyVerdict::Action::follow : ReplyVerdict::Action::ask;
    verdict.refresh_map = moved;
    return verdict;
  }
  const bool try_again = starts_with_word(reply, "TRYAGAIN");
  const bool cluster_down = starts_with_word(reply, "CLUSTERDOWN");
  verdict.refresh_map = cluster_down;
  if (try_again || cluster_down) {
    // Keys of a slot that is being moved, or a cluster without quorum: the command did not run;
    // try again while there is time, else the caller gets the server's error.
    const auto delay = try_again ? kTryAgainDelay : kClusterDownDelay;
    if (context.now + delay < context.deadline) {
      verdict.action = ReplyVerdict::Action::retry_later;
      verdict.delay = delay;
    }
  }
  return verdict;
}

NodeErrorVerdict judge_node_error(std::error_code error) {
  NodeErrorVerdict verdict;
  if (error == route_again_error()) {
    verdict.action = NodeErrorVerdict::Action::route_again;
    return verdict;
  }
  // A node that could not be reached or stopped answering may have left: the map may have moved.
  verdict.refresh_map = error == condition::transient;
  return verdict;
}

SlotsVerdict judge_slots_reply(const RedisUrl::Endpoint& asked, std::error_code error,
                               std::string detail, const std::vector<Reply>& replies) {
  SlotsVerdict verdict;
  if (error == route_again_error()) {
    verdict.failure = {
        make_error_code(errc::connection_lost),
        "the cluster node " + asked.address() + " left while asked for the slot map"};
    return verdict;
  }
  if (error) {
    verdict.failure = {error, std::move(detail)};
    // Credentials and certificates are the same for every node: one refusal is everyone's.
    if (error == condition::fatal)
      verdict.action = SlotsVerdict::Action::fatal;
    return verdict;
  }
  if (replies.empty()) {
    verdict.failure = {make_error_code(errc::unexpected_reply),
                       "the cluster node " + asked.address() + " gave no reply to CLUSTER SLOTS"};
    return verdict;
  }
  const Reply& reply = replies.front();
  if (reply.is_error()) {
    if (reply.str.find("cluster support disabled") != std::string::npos) {
      verdict.action = SlotsVerdict::Action::fatal;
      verdict.failure = {make_error_code(errc::connect_failed),
                         "the server at " + asked.address() +
                             " is not a Redis Cluster node (cluster support is disabled); use a "
                             "redis:// URL for a single server"};
      return verdict;
    }
    verdict.failure = {classify_error_reply(reply.str), "the cluster node " + asked.address() +
                                                            " refused CLUSTER SLOTS: " + reply.str};
    return verdict;
  }
  if (parse_slot_map(reply, asked.host, verdict.ranges)) {
    verdict.action = SlotsVerdict::Action::apply;
    return verdict;
  }
  verdict.failure = {make_error_code(errc::server_error),
                     "the cluster node " + asked.address() +
                         " answered CLUSTER SLOTS with no slots assigned; is the cluster created?"};
  return verdict;
}

std::vector<RedisUrl::Endpoint> slot_map_sources(std::vector<RedisUrl::Endpoint> masters,
                                                 const std::vector<RedisUrl::Endpoint>& seeds,
                                                 bool has_map, bool last_refresh_failed) {
  // Every master is asked and the first slot map that comes back wins: a master that died only
  // delays its own answer.
  std::vector<RedisUrl::Endpoint> asked = std::move(masters);
  if (!has_map || last_refresh_failed || asked.empty()) {
    for (const RedisUrl::Endpoint& seed : seeds) {
      if (std::find(asked.begin(), asked.end(), seed) == asked.end())
        asked.push_back(seed);
    }
  }
  return asked;
}

std::vector<Request> key_lookups(std::span<const Request> requests,
                                 std::span<const Request::Keys> keys,
                                 std::vector<std::size_t>& unknown) {
  unknown.clear();
  std::vector<Request> lookups;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != Request::Keys::unknown)
      continue;
    const std::vector<std::string> command = codec::parse_command(requests[i].bytes());
    std::vector<std::string_view> args = {"COMMAND", "GETKEYS"};
    args.insert(args.end(), command.begin(), command.end());
    lookups.push_back(Request::command(std::span<const std::string_view>(args)).without_keys());
    unknown.push_back(i);
  }
  return lookups;
}

void apply_key_lookups(std::span<const std::size_t> unknown, std::span<const Reply> replies,
                       std::span<Request::Keys> keys, std::span<std::uint16_t> slots) {
  for (std::size_t k = 0; k < unknown.size(); ++k) {
    const std::size_t i = unknown[k];
    if (k < replies.size() && replies[k].type == Reply::Type::array) {
      for (const Reply& key : replies[k].elements)
        Request::add_key(keys[i], slots[i], key.str);
    }
    if (keys[i] == Request::Keys::unknown)
      keys[i] = Request::Keys::none;
  }
}

ClusterFailure cross_slot_failure(std::size_t index, std::string_view cluster_address) {
  return {make_error_code(errc::cross_slot),
          "the keys of request " + std::to_string(index + 1) +
              " of the call are in different hash slots of the Redis Cluster at " +
              std::string(cluster_address) +
              ", so no single node can run it; give them a common {hash tag}"};
}

ClusterFailure unserved_failure(std::string_view cluster_address,
                                std::chrono::milliseconds command_timeout,
                                const ClusterFailure& last_refresh_failure) {
  std::string why = "no node of the Redis Cluster at " + std::string(cluster_address) +
                    " served the call's slot within " + std::to_string(command_timeout.count()) +
                    " ms; the call was not sent";
  if (last_refresh_failure.error)
    why += " (" + last_refresh_failure.detail + ")";
  return {make_error_code(errc::command_timeout), std::move(why)};
}

}  // namespace leasehold::detail
