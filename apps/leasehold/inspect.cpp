// leasehold status / list / release --force: what is held, and the operator's way out.
#include <fnmatch.h>

#include <iostream>
#include <sstream>

#include "inspect.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

std::string short_token(const std::string& token) {
  return token.substr(0, 8) + "\xe2\x80\xa6";
}
std::string short_token_ascii(const std::string& token) {
  return token.substr(0, 8);
}

long long server_now_ms(Client& redis) {
  const Reply time = redis.process(Command{"TIME"});
  return std::stoll(time.elements[0].str) * 1000 + std::stoll(time.elements[1].str) / 1000;
}

struct Lease {
  std::string token;
  long long ms_left = 0;
};

struct NameStatus {
  std::string name;
  std::optional<Lease> writer;
  std::vector<Lease> readers;
  std::optional<Lease> cron;
  std::vector<Lease> permits;  // the holders of `run --limit` permits
  long long permit_count = 0;  // the count of the last grant
};

// The live members of a sorted set of leases scored by their end in server ms.
std::vector<Lease> live_members(Client& redis, const std::string& key, long long now) {
  std::vector<Lease> leases;
  const Reply members = redis.process(Command{"ZRANGE", key, "0", "-1", "WITHSCORES"});
  for (std::size_t i = 0; i + 1 < members.elements.size(); i += 2) {
    const long long end = static_cast<long long>(std::stod(members.elements[i + 1].str));
    if (end > now)
      leases.push_back(Lease{members.elements[i].str, end - now});
  }
  return leases;
}

NameStatus read_status(const Globals& globals, Client& redis, const std::string& name) {
  NameStatus status{name, {}, {}, {}, {}, 0};
  const auto lock = run_lock(globals, milliseconds(1000));
  const Reply writer = redis.process(Command{"GET", lock.writer_key(name)});
  if (writer.type == Reply::Type::string)
    status.writer =
        Lease{writer.str, redis.process(Command{"PTTL", lock.writer_key(name)}).integer};
  const long long now = server_now_ms(redis);
  status.readers = live_members(redis, lock.readers_key(name), now);
  const auto permits = run_semaphore(globals, milliseconds(1000), 1);
  status.permits = live_members(redis, permits.holders_key(name), now);
  if (!status.permits.empty()) {
    const Reply count = redis.process(Command{"GET", permits.count_key(name)});
    if (count.type == Reply::Type::string)
      status.permit_count = std::stoll(count.str);
  }
  const std::string cron_key = cron_lock(globals, milliseconds(1000)).key(name);
  const Reply cron = redis.process(Command{"GET", cron_key});
  if (cron.type == Reply::Type::string)
    status.cron = Lease{cron.str, redis.process(Command{"PTTL", cron_key}).integer};
  return status;
}

Json lease_json(const Lease& lease) {
  const StoredLease stored = read_stored_lease(lease.token);
  return {{"token", short_token_ascii(stored.id_hex)},
          {"ms_left", lease.ms_left},
          {"holder", holder_json(stored.holder)}};
}

// For a terminal: control characters of a host or label shown as '?'.
std::string printable(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return text;
}

// "02b93aa7… (web-3, pid 4121, "deploy.sh prod", for 12 s; 18 s left)"; without a holder's
// identity "02b93aa7… (18 s left)".
std::string lease_text(const Lease& lease) {
  const StoredLease stored = read_stored_lease(lease.token);
  std::string text = short_token(stored.id_hex) + " (";
  if (stored.holder) {
    const auto held = std::max(
        milliseconds::zero(),
        std::chrono::duration_cast<milliseconds>(server_clock_now() - stored.holder->taken_at));
    text += printable(stored.holder->host) + ", pid " + std::to_string(stored.holder->pid) +
            ", \"" + printable(stored.holder->label) + "\", for " + format_duration(held) + "; ";
  }
  return text + format_duration(milliseconds(lease.ms_left)) + " left)";
}

Json leases_json(const std::vector<Lease>& leases) {
  Json array = Json::array();
  for (const Lease& lease : leases)
    array.push_back(lease_json(lease));
  return array;
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

std::string json_text(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

int status(const Globals& globals, const std::vector<std::string>& names, bool json) {
  if (names.empty())
    throw UsageError{"status: give at least one NAME"};
  Client redis = connect_or_exit(globals);
  try {
    std::ostringstream out;
    Json statuses = Json::array();
    for (std::size_t n = 0; n < names.size(); ++n) {
      NameStatus status;
      try {
        status = read_status(globals, redis, names[n]);
      } catch (const Error& e) {
        exit_failure(globals, redis, names[n], e);
      }
      const bool held =
          status.writer || !status.readers.empty() || status.cron || !status.permits.empty();
      if (json) {
        statuses.push_back(
            {{"name", status.name},
             {"state", status.writer             ? "exclusive"
                       : !status.readers.empty() ? "shared"
                                                 : "free"},
             {"writer", status.writer ? lease_json(*status.writer) : Json()},
             {"readers", leases_json(status.readers)},
             {"cron", status.cron ? lease_json(*status.cron) : Json()},
             {"permits",
              {{"count", status.permit_count}, {"holders", leases_json(status.permits)}}}});
        continue;
      }
      out << status.name << ": ";
      if (!held)
        out << "free";
      if (status.writer) {
        out << "held exclusively by " << lease_text(*status.writer);
      }
      if (!status.readers.empty()) {
        out << "shared by " << status.readers.size() << " reader(s):";
        for (const auto& reader : status.readers)
          out << " " << lease_text(reader);
      }
      if (status.cron) {
        out << (status.writer || !status.readers.empty() ? "; " : "") << "cron interval held by "
            << lease_text(*status.cron);
      }
      if (!status.permits.empty()) {
        out << (status.writer || !status.readers.empty() || status.cron ? "; " : "")
            << status.permits.size() << " of " << status.permit_count << " permits held:";
        for (const auto& permit : status.permits)
          out << " " << lease_text(permit);
      }
      out << "\n";
    }
    if (json)
      out << json_text(statuses) << "\n";
    std::cout << out.str();
    return 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

int raw_key_status(const Globals& globals, const std::vector<std::string>& keys, bool json) {
  Client redis = connect_or_exit(globals);
  std::ostringstream out;
  Json statuses = Json::array();
  for (const std::string& key : keys) {
    if (key.empty())
      throw UsageError{"status: --raw-key: KEY must not be empty"};
    Reply value;
    long long ms_left = 0;
    try {
      value = redis.process(Command{"GET", key});
      if (value.type == Reply::Type::string)
        ms_left = redis.process(Command{"PTTL", key}).integer;
    } catch (const Error& e) {
      exit_raw_key_failure(redis, key, e);
    }
    const bool held = value.type == Reply::Type::string;
    // Another client's value is shown as leasehold's are: its first 8 characters only.
    const std::string shown = held ? value.str.substr(0, 8) : std::string();
    if (json) {
      statuses.push_back(
          {{"raw_key", key},
           {"state", held ? "held" : "free"},
           {"holder", held ? Json{{"token", shown}, {"ms_left", ms_left}} : Json()}});
      continue;
    }
    out << key << ": ";
    if (!held)
      out << "free\n";
    else if (ms_left < 0)
      out << "held by " << printable(shown) << "\xe2\x80\xa6 (no TTL: it never runs out)\n";
    else
      out << "held by " << printable(shown) << "\xe2\x80\xa6 ("
          << format_duration(milliseconds(ms_left)) << " left)\n";
  }
  if (json)
    out << json_text(statuses) << "\n";
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
      std::cout << key << ": nothing to release\n";
    else if (type.str == "string")
      std::cout << key << ": removed its lock\n";
    else
      std::cout << key << ": removed it, which held a " << type.str << "\n";
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
  const std::string run_prefix = globals.prefix + ":RwLock:{run:";
  const std::string permits_prefix = globals.prefix + ":Semaphore:{run:";
  const std::string cron_prefix = globals.prefix + ":Lock:cron:";
  const bool run_lease = key.starts_with(run_prefix) &&
                         (key.ends_with("}:w") || key.ends_with("}:r") || key.ends_with("}:i"));
  const bool permit_lease = key.starts_with(permits_prefix) && key.ends_with("}:h");
  if ((run_lease && key.size() > run_prefix.size() + 3) ||
      (permit_lease && key.size() > permits_prefix.size() + 3)) {
    const std::size_t from = run_lease ? run_prefix.size() : permits_prefix.size();
    const std::string escaped = key.substr(from, key.size() - from - 3);
    // Undo the %-escaping of braces and '%'.
    std::string name;
    for (std::size_t i = 0; i < escaped.size(); ++i) {
      if (escaped.compare(i, 3, "%7B") == 0)
        name += '{', i += 2;
      else if (escaped.compare(i, 3, "%7D") == 0)
        name += '}', i += 2;
      else if (escaped.compare(i, 3, "%25") == 0)
        name += '%', i += 2;
      else
        name += escaped[i];
    }
    return name;
  }
  if (key.starts_with(cron_prefix))
    return key.substr(cron_prefix.size());
  return std::nullopt;  // not a lease of the leasehold command
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
      std::cout << "no leases under '" << globals.prefix << "'\n";
      return 0;
    }
    if (names.empty()) {
      std::cout << "[]\n";
      return 0;
    }
    return status(globals, names, json);
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
    const std::vector<ForeignKey> foreign_keys =
        keys_of_another_type(redis, name_keys(globals, name));
    for (const ForeignKey& foreign : foreign_keys) {
      redis.process(Command{"DEL", foreign.expected.key});
      std::cout << name << ": removed " << foreign.expected.key << ", which held a " << foreign.type
                << "\n";
    }
    const NameStatus status = read_status(globals, redis, name);
    const auto lock = run_lock(globals, milliseconds(1000));
    // Two calls: the run's keys share a hash slot, the cron key has its own (a cluster runs a
    // command only on keys of one slot). The run's release tells its waiters; its fencing
    // counter stays: fences only grow.
    const long long removed_run = redis.process(lock.force_release(name));
    const Reply removed_cron =
        redis.process(Command{"DEL", cron_lock(globals, milliseconds(1000)).key(name)});
    // The `run --limit` permits (their waiters find out at their recheck).
    const auto permits = run_semaphore(globals, milliseconds(1000), 1);
    const Reply removed_permits =
        redis.process(Command{"DEL", permits.holders_key(name), permits.count_key(name)});
    const long long removed = removed_run + removed_cron.integer + removed_permits.integer;
    std::vector<std::string> what;
    if (status.writer)
      what.push_back("the exclusive lease " + short_token(status.writer->token));
    if (!status.readers.empty())
      what.push_back(std::to_string(status.readers.size()) + " shared lease(s)");
    if (status.cron)
      what.push_back("the cron interval lease " + short_token(status.cron->token));
    if (!status.permits.empty())
      what.push_back(std::to_string(status.permits.size()) + " permit(s)");
    if (removed == 0) {
      if (foreign_keys.empty())
        std::cout << name << ": nothing to release\n";
      return 0;
    }
    std::cout << name << ": removed ";
    if (what.empty())
      std::cout << removed << " expired key(s)";
    for (std::size_t i = 0; i < what.size(); ++i)
      std::cout << (i ? ", " : "") << what[i];
    std::cout << "\n";
    return 0;
  } catch (const Error& e) {
    exit_unavailable(e);
  }
}

}  // namespace leasehold::cli
