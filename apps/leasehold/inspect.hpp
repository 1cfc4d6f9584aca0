// What status, list and top share: finding the leases under the prefix by SCAN, and their JSON
// (acquire and doctor print theirs the same way).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "leases.hpp"

namespace leasehold::cli {

using Json = nlohmann::ordered_json;

// SCAN MATCH `pattern` over the server of `redis`, or over every master of a cluster (a cluster's
// keys are spread over them), a bounded number of calls at a time: a large keyspace is walked in
// steps without blocking the server (never KEYS).
class KeyScanner {
 public:
  // Asks a cluster for its masters (CLUSTER SLOTS); `redis` must outlive the scanner.
  KeyScanner(Client& redis, std::string pattern);

  // The keys found by at most `max_calls` SCAN calls (0: no limit), going on where the last call
  // stopped; it stops early at the end of a pass (every node walked once), and the next call
  // starts a new pass.
  std::vector<std::string> scan(std::size_t max_calls);
  // How many passes have ended.
  std::size_t passes() const noexcept { return passes_; }

 private:
  Client& scanned(std::size_t node);

  Client& redis_;
  std::string pattern_;
  std::vector<Client> masters_;  // a cluster's; empty: `redis_` is scanned
  std::size_t node_ = 0;         // the node whose keys are being walked
  std::string cursor_ = "0";
  std::size_t passes_ = 0;
};

// Every key matching `pattern`: one whole pass of a KeyScanner.
std::vector<std::string> scan_keys(Client& redis, const std::string& pattern);

// The run and cron NAMEs whose leases are among `keys` (a run's writer, readers or intent, its
// `--limit` permits, a cron interval), those matching the glob `pattern` (all when it is empty).
// Other keys are left out: a run's fencing counter (":f") outlives its leases, and a queue
// (":w:queue", ":w:tickets") or a count (":n") is not one.
void add_lease_names(const Globals& globals, const std::string& pattern,
                     const std::vector<std::string>& keys, std::set<std::string>& names);

// {"host", "pid", "label", "taken_at_ms"}, or null for a lease taken without identity.
Json holder_json(const std::optional<Holder>& holder);
// {"host", "pid", "label", "value", "term", "held_ms"}: null where the leader did not say.
Json leader_json(const Leader& leader);
// One line of JSON, in ASCII: other characters \u-escaped, so that none of the C1 controls a name
// may hold reaches a terminal as it is; bytes that are not UTF-8 become U+FFFD.
std::string json_text(const Json& json);

}  // namespace leasehold::cli
