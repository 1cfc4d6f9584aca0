// leasehold doctor's permission checks: each command leasehold sends, tried in a harmless form on a
// scratch key and channel, as the user of the URL. Redis checks the ACL before it runs a command,
// so a command that gets past it with an error of its own (WRONGTYPE on the scratch string) is
// allowed and has changed nothing.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

enum class Feature { locks, waiting, notifications, observing, tracking };

enum class Verdict { allowed, refused, unsupported, failed, unchecked };

struct ProbeResult {
  Feature feature;
  std::string command;
  Verdict verdict = Verdict::allowed;
  std::string detail;  // the server's error, or why the command was not tried
};

// The SHA1 of "return 1", the script EVAL loads: EVALSHA of it runs the same script.
constexpr const char* kReturnOneSha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";

struct Probe {
  Feature feature;
  std::vector<std::string> args;
  std::string label = {};  // what the findings call it (a subcommand: CLIENT|ID); else args[0]
};

// In order: SET creates the scratch key (with a TTL, so that it goes away even if DEL is
// refused), the others leave it as it is (ZADD XX never adds; INCR and the sorted-set commands
// meet a string and fail past the ACL check), DEL removes it last.
std::vector<Probe> probes_on(const std::string& key, bool redis6_mode) {
  return {{Feature::locks, {"SET", key, "leasehold-doctor", "NX", "PX", "10000", "GET"}},
          {Feature::locks, {"GET", key}},
          {Feature::waiting, {"EXISTS", key}},
          {Feature::waiting, {"PTTL", key}},
          {Feature::locks, {"PEXPIRE", key, "10000"}},
          {Feature::waiting, {"INCR", key}},
          {Feature::waiting, {"ZADD", key, "XX", "0", "m"}},
          {Feature::waiting, {"ZREM", key, "m"}},
          {Feature::waiting, {"ZRANGE", key, "0", "-1"}},
          {Feature::waiting, {"ZRANGEBYSCORE", key, "-inf", "+inf"}},
          {Feature::waiting, {"ZREMRANGEBYSCORE", key, "1", "0"}},
          {Feature::waiting, {"ZSCORE", key, "m"}},
          {Feature::waiting, {"ZRANK", key, "m"}},
          {Feature::locks, {"EVAL", "return 1", "1", key}},
          {Feature::locks, {"EVALSHA", kReturnOneSha, "1", key}},
          {Feature::waiting, {"TIME"}},
          {Feature::notifications, {redis6_mode ? "PUBLISH" : "SPUBLISH", key, "leasehold-doctor"}},
          {Feature::observing, {"HSET", key, "f", "v"}},
          {Feature::observing, {"HGET", key, "f"}},
          {Feature::observing, {"HMGET", key, "f"}},
          // The doctor's connection tracks nothing: turning tracking off changes nothing, and
          // CACHING without tracking fails past the ACL check.
          {Feature::tracking, {"CLIENT", "ID"}, "CLIENT|ID"},
          {Feature::tracking, {"CLIENT", "TRACKING", "off"}, "CLIENT|TRACKING"},
          {Feature::tracking, {"CLIENT", "CACHING", "yes"}, "CLIENT|CACHING"},
          {Feature::locks, {"DEL", key}}};
}

ProbeResult judge_probe(Feature feature, const std::string& command, const Reply& reply) {
  ProbeResult result{feature, command, Verdict::allowed, reply.str};
  if (!reply.is_error())
    return result;
  const std::string& error = reply.str;
  auto says = [&](std::string_view words) { return error.find(words) != std::string::npos; };
  // The errors the probes are built to meet come after the ACL check, so they mean allowed:
  // WRONGTYPE on the scratch string, NOSCRIPT from EVALSHA when EVAL was refused, INCR's "not
  // an integer", and CLIENT CACHING's refusal on a connection that tracks nothing.
  if (is_noperm(reply))
    result.verdict = Verdict::refused;
  else if (says("unknown command") || says("syntax error") || says("wrong number of arguments"))
    result.verdict = Verdict::unsupported;
  else if (!error.starts_with("WRONGTYPE") && !error.starts_with("NOSCRIPT") &&
           !says("not an integer") && !says("CLIENT CACHING can be called only"))
    result.verdict = Verdict::failed;
  return result;
}

// SSUBSCRIBE turns a connection into a subscriber's: it is tried on a connection of its own,
// whose end ends the subscription.
std::vector<ProbeResult> probe_subscribe(const RedisUrl& url, ClientOptions options,
                                         const std::string& channel, bool redis6_mode) {
  options.warn_on_eviction_policy = false;
  Client subscriber(url, options);
  std::vector<ProbeResult> results;
  const auto commands = redis6_mode ? std::array<const char*, 2>{"SUBSCRIBE", "UNSUBSCRIBE"}
                                    : std::array<const char*, 2>{"SSUBSCRIBE", "SUNSUBSCRIBE"};
  for (const char* command : commands)
    results.push_back(
        judge_probe(Feature::notifications, command, ask(subscriber, {command, channel})));
  // Where the server sends a tracked key's invalidations (a channel of its own); the
  // subscription ends with the connection.
  results.push_back(judge_probe(Feature::tracking, "SUBSCRIBE",
                                ask(subscriber, {"SUBSCRIBE", "__redis__:invalidate"})));
  return results;
}

std::vector<ProbeResult> run_probes(Client& client, const std::string& key, bool redis6_mode) {
  std::vector<ProbeResult> results;
  bool created = false;
  for (const Probe& probe : probes_on(key, redis6_mode)) {
    const std::string& command = probe.label.empty() ? probe.args[0] : probe.label;
    // INCR would create a key that SET did not: it is tried only on the scratch string.
    if (command == "INCR" && !created) {
      results.push_back({probe.feature, command, Verdict::unchecked, "SET made no scratch key"});
      continue;
    }
    const Reply reply = ask(client, probe.args);
    if (command == "SET")
      created = reply.is_nil();
    results.push_back(judge_probe(probe.feature, command, reply));
  }
  return results;
}

struct FeatureTraits {
  std::string check;
  Level level_if_missing;
  std::string consequence;
};

FeatureTraits traits_of(Feature feature) {
  switch (feature) {
    case Feature::locks:
      return {"locks", Level::problem, "leases cannot be taken, extended or released"};
    case Feature::waiting:
      return {"waiting", Level::problem,
              "waiting in turn fails (leasehold run without -n, lock_for, with_lock)"};
    case Feature::notifications:
      return {"notifications", Level::warning,
              "a waiter learns of a release by trying every second instead of at once"};
    case Feature::observing:
      return {"observing", Level::warning,
              "a watch of a name ends refused (Watch, leasehold leader --watch)"};
    case Feature::tracking:
      return {"tracking", Level::warning,
              "a watch of a lock learns of a change by looking every second instead of at once"};
  }
  return {"locks", Level::problem, ""};
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items)
    out += (out.empty() ? "" : separator) + item;
  return out;
}

// What the user lacks among `results`, and the ACL SETUSER grants that give it.
struct Missing {
  std::vector<std::string> parts;   // "user 'app' may not run EVAL, EVALSHA", ...
  std::vector<std::string> grants;  // "+eval", "~leasehold:*", ...
  bool only_unchecked = true;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// `channels`: the pattern of the channels the feature uses.
Missing missing_of(const std::vector<ProbeResult>& results, const std::string& user,
                   const std::string& prefix, const std::string& channels_used) {
  Missing missing;
  std::vector<std::string> refused, unsupported, unchecked;
  std::vector<std::pair<std::string, std::vector<std::string>>> failures;  // by error
  bool keys = false, channels = false;
  for (const ProbeResult& result : results) {
    if (result.verdict == Verdict::refused) {
      // NOPERM names a command, or says "keys" or "channels" (Redis 7.0 and later phrasings).
      const bool command = result.detail.find("command") != std::string::npos;
      const bool channel = result.detail.find("channel") != std::string::npos;
      if (command) {
        refused.push_back(result.command);
        missing.grants.push_back("+" + lower(result.command));
      }
      keys = keys || (!command && !channel);
      channels = channels || (!command && channel);
    } else if (result.verdict == Verdict::unsupported) {
      unsupported.push_back(result.command);
    } else if (result.verdict == Verdict::failed) {
      const std::string error = first_sentence(result.detail);
      auto same = std::find_if(failures.begin(), failures.end(),
                               [&](const auto& failure) { return failure.first == error; });
      if (same == failures.end())
        same = failures.insert(failures.end(), {error, {}});
      same->second.push_back(result.command);
    } else if (result.verdict == Verdict::unchecked) {
      unchecked.push_back(result.command);
    }
  }
  if (!refused.empty())
    missing.parts.push_back("user " + quoted(user) + " may not run " + join(refused, ", "));
  if (keys) {
    missing.parts.push_back("user " + quoted(user) + " may not use the keys " + prefix + ":*");
    missing.grants.push_back("~" + prefix + ":*");
  }
  if (channels) {
    missing.parts.push_back("user " + quoted(user) + " may not use the channels " + channels_used);
    missing.grants.push_back("&" + channels_used);
  }
  for (const auto& [error, commands] : failures)
    missing.parts.push_back(join(commands, ", ") + " failed: " + error);
  if (!unsupported.empty())
    missing.parts.push_back("the server does not support " + join(unsupported, ", ") +
                            " as leasehold sends it (Redis 7.0 or later does)");
  missing.only_unchecked = missing.parts.empty();
  if (!unchecked.empty())
    missing.parts.push_back(join(unchecked, ", ") + " not checked (SET made no scratch key)");
  return missing;
}

Finding feature_finding(Feature feature, const std::vector<ProbeResult>& all,
                        const std::string& user, const std::string& prefix) {
  const FeatureTraits traits = traits_of(feature);
  std::vector<ProbeResult> results;
  std::vector<std::string> commands;
  for (const ProbeResult& result : all) {
    if (result.feature == feature) {
      results.push_back(result);
      commands.push_back(result.command);
    }
  }
  // Invalidations come on the server's own channel; every other one is under the prefix.
  const Missing missing = missing_of(
      results, user, prefix,
      feature == Feature::tracking ? std::string("__redis__:invalidate") : prefix + ":*");
  if (missing.parts.empty()) {
    return {traits.check, Level::ok,
            traits.check + ": user " + quoted(user) + " may run " + join(commands, ", ")};
  }
  // A command only left untried may well be allowed: its consequence is a risk, not a fact.
  const std::string consequence =
      missing.only_unchecked ? "if refused, " + traits.consequence : traits.consequence;
  std::string message = traits.check + ": " + join(missing.parts, "; ") + ": " + consequence;
  if (!missing.grants.empty())
    message += "; allow it: ACL SETUSER " + user + " " + join(missing.grants, " ");
  return {traits.check, missing.only_unchecked ? Level::warning : traits.level_if_missing, message};
}

}  // namespace

std::vector<Finding> permission_findings(Client& client, const RedisUrl& url,
                                         const std::string& user, const std::string& prefix,
                                         const std::string& scratch, bool redis6_mode) {
  std::vector<ProbeResult> results = run_probes(client, scratch, redis6_mode);
  for (ProbeResult& result : probe_subscribe(url, client.options(), scratch, redis6_mode))
    results.push_back(std::move(result));
  std::vector<Finding> findings;
  for (Feature feature : {Feature::locks, Feature::waiting, Feature::notifications,
                          Feature::observing, Feature::tracking})
    findings.push_back(feature_finding(feature, results, user, prefix));
  return findings;
}

}  // namespace leasehold::cli::doctor_detail
