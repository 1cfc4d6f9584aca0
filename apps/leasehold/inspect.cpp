// leasehold status / list / release --force: what is held, and the operator's way out.
#include <fnmatch.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"

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

using Json = nlohmann::ordered_json;

Json lease_json(const Lease& lease) {
  const StoredLease stored = read_stored_lease(lease.token);
  Json holder;
  if (stored.holder)
    holder = {{"host", stored.holder->host},
              {"pid", stored.holder->pid},
              {"label", stored.holder->label},
              {"taken_at_ms",
               std::chrono::duration_cast<milliseconds>(stored.holder->taken_at.time_since_epoch())
                   .count()}};
  return {
      {"token", short_token_ascii(stored.id_hex)}, {"ms_left", lease.ms_left}, {"holder", holder}};
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
    const auto held = std::max(milliseconds::zero(),
                               std::chrono::duration_cast<milliseconds>(
                                   std::chrono::system_clock::now() - stored.holder->taken_at));
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

// One line of JSON; bytes of a name that are not UTF-8 become U+FFFD.
std::string json_text(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

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

// Every key matching `pattern`, by SCAN (never KEYS: a large keyspace is walked in steps
// without blocking the server). A cluster's keys are spread over its masters: each is scanned.
std::vector<std::string> scan_keys(Client& redis, const std::string& pattern) {
  std::vector<std::string> keys;
  auto scan = [&](Client& node) {
    std::string cursor = "0";
    do {
      const Reply page = node.process(Command{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
      cursor = page.elements[0].str;
      for (const Reply& key : page.elements[1].elements)
        keys.push_back(key.str);
    } while (cursor != "0");
  };
  if (redis.url().transport != RedisUrl::Transport::cluster) {
    scan(redis);
    return keys;
  }
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
  for (const RedisUrl::Endpoint& endpoint : masters) {
    Client node(redis.url().node(endpoint), redis.options());
    scan(node);
  }
  return keys;
}

int list(const Globals& globals, const std::string& pattern, bool json) {
  Client redis = connect_or_exit(globals);
  try {
    const std::string run_prefix = globals.prefix + ":RwLock:{run:";
    const std::string permits_prefix = globals.prefix + ":Semaphore:{run:";
    const std::string cron_prefix = globals.prefix + ":Lock:cron:";
    std::vector<std::string> names;
    for (const std::string& found : scan_keys(redis, globals.prefix + ":*")) {
      const Reply key = Reply::make_string(found);
      {
        std::string name;
        // Only the leases themselves: a run's fencing counter (":f") outlives them, and a
        // queue (":w:queue", ":w:tickets") or a count (":n") is not one.
        const bool run_lease =
            key.str.starts_with(run_prefix) &&
            (key.str.ends_with("}:w") || key.str.ends_with("}:r") || key.str.ends_with("}:i"));
        const bool permit_lease = key.str.starts_with(permits_prefix) && key.str.ends_with("}:h");
        if ((run_lease && key.str.size() > run_prefix.size() + 3) ||
            (permit_lease && key.str.size() > permits_prefix.size() + 3)) {
          const std::size_t from = run_lease ? run_prefix.size() : permits_prefix.size();
          const std::string escaped = key.str.substr(from, key.str.size() - from - 3);
          // Undo the %-escaping of braces and '%'.
          for (std::size_t i = 0; i < escaped.size(); ++i) {
            if (escaped[i] == '%' && i + 2 < escaped.size() + 0 &&
                escaped.compare(i, 3, "%7B") == 0)
              name += '{', i += 2;
            else if (escaped.compare(i, 3, "%7D") == 0)
              name += '}', i += 2;
            else if (escaped.compare(i, 3, "%25") == 0)
              name += '%', i += 2;
            else
              name += escaped[i];
          }
        } else if (key.str.starts_with(cron_prefix)) {
          name = key.str.substr(cron_prefix.size());
        } else {
          continue;  // not a lease of the leasehold command
        }
        if (!pattern.empty() && fnmatch(pattern.c_str(), name.c_str(), 0) != 0)
          continue;
        if (std::find(names.begin(), names.end(), name) == names.end())
          names.push_back(name);
      }
    }
    std::sort(names.begin(), names.end());
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
