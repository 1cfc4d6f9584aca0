// leasehold status / list / release --force: what is held, and the operator's way out.
#include <fnmatch.h>

#include <iostream>
#include <sstream>

#include "displayable.hpp"
#include "inspect.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

// A name's leases as `status` shows them.
struct NameStatus {
  std::string name;
  std::optional<LeaseInfo> writer;
  std::vector<LeaseInfo> readers;
  std::optional<LeaseInfo> cron;
  std::vector<LeaseInfo> permits;  // the holders of `run --limit` permits
  std::uint64_t permit_count = 0;  // the count of the last grant
  std::optional<Leader> leader;    // of the name's election (leasehold elect)
};

// The leases read for a name as `status` shows them; a failure (a key of another type among the
// name's) is thrown.
NameStatus name_status(const NameLeases& leases) {
  NameStatus status{leases.name, {}, {}, {}, {}, 0, leases.leader.value()};
  for (const LeaseInfo& lease : leases.run.value().leases) {
    if (lease.kind == LeaseInfo::Kind::exclusive)
      status.writer = lease;
    else
      status.readers.push_back(lease);
  }
  const LeaseStatus& permits = leases.permits.value();
  status.permits = permits.leases;
  if (!status.permits.empty())
    status.permit_count = permits.permits.value_or(0);
  const LeaseStatus& cron = leases.cron.value();
  if (!cron.leases.empty())
    status.cron = cron.leases.front();
  return status;
}

Json lease_json(const LeaseInfo& lease) {
  return {{"token", lease.id_prefix},
          {"ms_left", lease.time_left.count()},
          {"holder", holder_json(lease.holder)}};
}

Json leases_json(const std::vector<LeaseInfo>& leases) {
  Json array = Json::array();
  for (const LeaseInfo& lease : leases)
    array.push_back(lease_json(lease));
  return array;
}

Json status_json(const NameStatus& status) {
  return {{"name", status.name},
          {"state", status.writer             ? "exclusive"
                    : !status.readers.empty() ? "shared"
                                              : "free"},
          {"writer", status.writer ? lease_json(*status.writer) : Json()},
          {"readers", leases_json(status.readers)},
          {"cron", status.cron ? lease_json(*status.cron) : Json()},
          {"permits", {{"count", status.permit_count}, {"holders", leases_json(status.permits)}}},
          {"leader", status.leader ? leader_json(*status.leader) : Json()}};
}

// A name's line of `status`, displayable: "NAME: free", "NAME: held exclusively by …", ...
std::string status_line(const NameStatus& status) {
  std::string line = status.name + ": ";
  const bool nothing_else =
      !status.writer && status.readers.empty() && !status.cron && status.permits.empty();
  if (nothing_else && !status.leader)
    line += "free";
  if (status.writer)
    line += "held exclusively by " + lease_text(*status.writer);
  if (!status.readers.empty()) {
    line += "shared by " + std::to_string(status.readers.size()) + " reader(s):";
    for (const auto& reader : status.readers)
      line += " " + lease_text(reader);
  }
  if (status.cron) {
    line += std::string(status.writer || !status.readers.empty() ? "; " : "") +
            "cron interval held by " + lease_text(*status.cron);
  }
  if (!status.permits.empty()) {
    line += std::string(status.writer || !status.readers.empty() || status.cron ? "; " : "") +
            std::to_string(status.permits.size()) + " of " + std::to_string(status.permit_count) +
            " permits held:";
    for (const auto& permit : status.permits)
      line += " " + lease_text(permit);
  }
  if (status.leader)  // leader_text() is displayable already
    return displayable(line) + (nothing_else ? "" : "; ") + "led in " + leader_text(*status.leader);
  return displayable(line);
}

}  // namespace

Json holder_json(const std::optional<Holder>& holder) {
  if (!holder)
    return Json();
  return {{"host", holder->host},
          {"pid", holder->pid},
          {"label", holder->label},
          {"taken_at_ms",
           std::chrono::duration_cast<milliseconds>(holder->taken_at.time_since_epoch()).count()}};
}

namespace {

// How long `leader` has led, by the servers' clock; nothing without its identity.
std::optional<milliseconds> held_for(const Leader& leader) {
  if (!leader.holder)
    return std::nullopt;
  return std::max(milliseconds::zero(), std::chrono::duration_cast<milliseconds>(
                                            server_clock_now() - leader.holder->taken_at));
}

}  // namespace

// {"host", "pid", "label", "value", "term", "held_ms"}: null where the leader did not say.
Json leader_json(const Leader& leader) {
  Json json;
  json["host"] = leader.holder ? Json(leader.holder->host) : Json(nullptr);
  json["pid"] = leader.holder ? Json(leader.holder->pid) : Json(nullptr);
  json["label"] = leader.holder ? Json(leader.holder->label) : Json(nullptr);
  json["value"] = leader.value ? Json(*leader.value) : Json(nullptr);
  json["term"] = leader.term;
  const auto held = held_for(leader);
  json["held_ms"] = held ? Json(held->count()) : Json(nullptr);
  return json;
}

std::string json_text(const Json& json) {
  return json.dump(-1, ' ', true, Json::error_handler_t::replace);
}

namespace {

// Prints the leases of `names`, read in one batch, as `status` shows them; the exit code.
int print_status(const Globals& globals, Client& redis, const std::vector<std::string>& names,
                 bool json) {
  try {
    std::ostringstream out;
    Json statuses = Json::array();
    for (const NameLeases& leases : read_leases(globals, redis, names)) {
      NameStatus status;
      try {
        status = name_status(leases);
      } catch (const Error& e) {
        exit_failure(globals, redis, leases.name, e);
      }
      if (json)
        statuses.push_back(status_json(status));
      else
        out << status_line(status) << "\n";
    }
    if (json)
      out << json_text(statuses) << "\n";
    std::cout << out.str();
    return 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

}  // namespace

int status(const Globals& globals, const std::vector<std::string>& names, bool json) {
  if (names.empty())
    throw UsageError{"status: give at least one NAME"};
  Client redis = connect_or_exit(globals);
  return print_status(globals, redis, names, json);
}

int raw_key_status(const Globals& globals, const std::vector<std::string>& keys, bool json) {
  std::vector<LeaseStatusQuery<>> batch;
  for (const std::string& key : keys) {
    if (key.empty())
      throw UsageError{"status: --raw-key: KEY must not be empty"};
    batch.emplace_back(lease_status(RawLock(milliseconds(1000)), key));
  }
  Client redis = connect_or_exit(globals);
  std::vector<Result<LeaseStatus>> statuses;
  try {
    statuses = redis.process(batch);
  } catch (const Error& e) {
    exit_unavailable(e);
  }
  std::ostringstream out;
  Json array = Json::array();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    std::optional<LeaseInfo> holder;
    try {
      const std::vector<LeaseInfo>& leases = statuses[k].value().leases;
      if (!leases.empty())
        holder = leases.front();
    } catch (const Error& e) {
      exit_raw_key_failure(redis, keys[k], e);
    }
    // Another client's value is shown as leasehold's are: its first 8 characters only.
    if (json) {
      array.push_back({{"raw_key", keys[k]},
                       {"state", holder ? "held" : "free"},
                       {"holder", holder ? Json{{"token", holder->id_prefix},
                                                {"ms_left", holder->time_left.count()}}
                                         : Json()}});
      continue;
    }
    out << displayable(keys[k] + ": " + (holder ? "held by " + lease_text(*holder) : "free"))
        << "\n";
  }
  if (json)
    out << json_text(array) << "\n";
  std::cout << out.str();
  return 0;
}

int release_raw_key_force(const Globals& globals, const std::string& key) {
  if (key.empty())
    throw UsageError{"release: --raw-key: KEY must not be empty"};
  Client redis = connect_or_exit(globals);
  try {
    // Whatever it holds, and whoever holds it: the operator asked.
    const Reply type = redis.process(Command{"TYPE", key});
    const Reply removed = redis.process(Command{"DEL", key});
    if (removed.integer == 0)
      std::cout << displayable(key + ": nothing to release") << "\n";
    else if (type.str == "string")
      std::cout << displayable(key + ": removed its lock") << "\n";
    else
      std::cout << displayable(key + ": removed it, which held a " + type.str) << "\n";
    return 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

KeyScanner::KeyScanner(Client& redis, std::string pattern)
    : redis_(redis), pattern_(std::move(pattern)) {
  if (redis.url().transport != RedisUrl::Transport::cluster)
    return;
  // CLUSTER SLOTS: [[first, last, [host, port, id], replicas...], ...]
  std::vector<RedisUrl::Endpoint> masters;
  for (const Reply& range : redis.process(Command{"CLUSTER", "SLOTS"}).elements) {
    const Reply& master = range.elements.at(2);
    RedisUrl::Endpoint endpoint{master.elements.at(0).str,
                                static_cast<std::uint16_t>(master.elements.at(1).integer)};
    if (endpoint.host.empty())
      endpoint.host = redis.url().host;
    if (std::find(masters.begin(), masters.end(), endpoint) == masters.end())
      masters.push_back(endpoint);
  }
  for (const RedisUrl::Endpoint& endpoint : masters)
    masters_.emplace_back(redis.url().node(endpoint), redis.options());
}

Client& KeyScanner::scanned(std::size_t node) {
  return masters_.empty() ? redis_ : masters_[node];
}

std::vector<std::string> KeyScanner::scan(std::size_t max_calls) {
  std::vector<std::string> keys;
  const std::size_t nodes = masters_.empty() ? 1 : masters_.size();
  for (std::size_t calls = 0; max_calls == 0 || calls < max_calls; ++calls) {
    const Reply page =
        scanned(node_).process(Command{"SCAN", cursor_, "MATCH", pattern_, "COUNT", "1000"});
    cursor_ = page.elements[0].str;
    for (const Reply& key : page.elements[1].elements)
      keys.push_back(key.str);
    if (cursor_ != "0")
      continue;
    node_ = (node_ + 1) % nodes;  // this node is walked: the next one, or a new pass
    if (node_ == 0) {
      ++passes_;
      break;
    }
  }
  return keys;
}

std::vector<std::string> scan_keys(Client& redis, const std::string& pattern) {
  return KeyScanner(redis, pattern).scan(0);
}

namespace {

// The run or cron NAME whose lease `key` is, or nothing for any other key.
std::optional<std::string> lease_name_of_key(const Globals& globals, const std::string& key) {
  const milliseconds any_ttl(1000);
  if (auto name = run_lock(globals, any_ttl).name_of_key(key))
    return name;
  if (auto name = run_semaphore(globals, any_ttl, 1).name_of_key(key))
    return name;
  if (auto name = elect_election(globals, any_ttl).name_of_key(key))
    return name;
  return cron_lock(globals, any_ttl).name_of_key(key);
}

}  // namespace

void add_lease_names(const Globals& globals, const std::string& pattern,
                     const std::vector<std::string>& keys, std::set<std::string>& names) {
  for (const std::string& key : keys) {
    std::optional<std::string> name = lease_name_of_key(globals, key);
    if (name && (pattern.empty() || fnmatch(pattern.c_str(), name->c_str(), 0) == 0))
      names.insert(std::move(*name));
  }
}

int list(const Globals& globals, const std::string& pattern, bool json) {
  Client redis = connect_or_exit(globals);
  try {
    std::set<std::string> found;
    add_lease_names(globals, pattern, scan_keys(redis, globals.prefix + ":*"), found);
    const std::vector<std::string> names(found.begin(), found.end());  // sorted, each once
    if (names.empty() && !json) {
      std::cout << displayable("no leases under '" + globals.prefix + "'") << "\n";
      return 0;
    }
    if (names.empty()) {
      std::cout << "[]\n";
      return 0;
    }
    return print_status(globals, redis, names, json);
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

int release_force(const Globals& globals, const std::string& name) {
  if (name.empty())
    throw UsageError{"release: NAME must not be empty"};
  Client redis = connect_or_exit(globals);
  try {
    // Keys that hold another type of value (something else wrote there): asked to force, this
    // removes them first, one DEL each (a cluster keeps a name's keys in two slots).
    const std::vector<ForeignKey> overwritten = keys_of_another_type(globals, redis, name);
    for (const ForeignKey& foreign : overwritten) {
      redis.process(Command{"DEL", foreign.expected.key});
      std::cout << displayable(name + ": removed " + foreign.expected.key + ", which held a " +
                               foreign.type)
                << "\n";
    }
    const NameStatus status = name_status(read_leases(globals, redis, {name}).front());
    // Three calls: the run's and the permits' keys share a hash slot, the cron key has its own
    // (a cluster runs a script only on keys of one slot). Each tells its waiters; the fencing
    // counters stay: fences only grow.
    const long long removed =
        redis.process(run_lock(globals, milliseconds(1000)).force_release(name)) +
        redis.process(run_semaphore(globals, milliseconds(1000), 1).force_release(name)) +
        redis.process(cron_lock(globals, milliseconds(1000)).force_release(name));
    // An election of the name (leasehold elect): its leader is deposed, and its elect exits 75.
    const auto election = elect_election(globals, milliseconds(1000));
    const std::optional<Leader> leader = redis.process(election.leader(name));
    const bool deposed = redis.process(election.force_release(name)) == 1;
    std::vector<std::string> what;
    if (deposed && leader)
      what.push_back("the leader of term " + std::to_string(leader->term) + " (" +
                     leader->id_prefix + "\xe2\x80\xa6)");
    if (status.writer)
      what.push_back("the exclusive lease " + status.writer->id_prefix + "\xe2\x80\xa6");
    if (!status.readers.empty())
      what.push_back(std::to_string(status.readers.size()) + " shared lease(s)");
    if (status.cron)
      what.push_back("the cron interval lease " + status.cron->id_prefix + "\xe2\x80\xa6");
    if (!status.permits.empty())
      what.push_back(std::to_string(status.permits.size()) + " permit(s)");
    if (removed == 0 && !deposed) {
      if (overwritten.empty())
        std::cout << displayable(name + ": nothing to release") << "\n";
      return 0;
    }
    std::string line = name + ": removed ";
    if (what.empty())
      line += std::to_string(removed + (deposed ? 1 : 0)) + " expired key(s)";
    for (std::size_t i = 0; i < what.size(); ++i)
      line += (i ? ", " : "") + what[i];
    std::cout << displayable(line) << "\n";
    return 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

}  // namespace leasehold::cli
