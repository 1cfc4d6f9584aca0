#include "history_checker.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

namespace leasehold::testing {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::min();

using LeaseKey = std::pair<int, std::uint64_t>;  // (pid, lease number)

// What the history proves about one lease.
struct LeaseLife {
  std::string name;
  char mode = 'w';
  std::vector<Span> pieces;         // merged, ordered; empty pieces never enter
  std::optional<std::int64_t> cut;  // the first release call: the holder acts no more
};

std::string ms_text(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  return text;
}

std::string describe(const Party& party) {
  std::ostringstream out;
  out << "pid " << party.pid;
  if (party.tid != 0)
    out << " tid " << party.tid;
  if (party.lease != 0)
    out << " lease " << party.lease;
  out << " (" << party.mode << ") [" << party.span.begin << ", " << party.span.end << ")";
  return out.str();
}

// The furthest-reaching earlier intervals of the two owners that reach furthest, so that the
// furthest one of any owner but a given one is at hand.
template <class Owner>
class Reach {
 public:
  void add(std::int64_t end, const Owner& owner, const Party& party) {
    if (first_.end != kNever && owner == first_.owner) {
      if (end > first_.end)
        first_ = {end, owner, party};
    } else if (second_.end != kNever && owner == second_.owner) {
      if (end > second_.end)
        second_ = {end, owner, party};
      if (second_.end > first_.end)
        std::swap(first_, second_);
    } else if (end > first_.end) {
      second_ = first_;
      first_ = {end, owner, party};
    } else if (end > second_.end) {
      second_ = {end, owner, party};
    }
  }
  // The earlier interval of another owner that reaches past `begin`, if any.
  std::optional<Party> conflict(std::int64_t begin, const Owner& owner) const {
    const Entry& other = (first_.end != kNever && first_.owner == owner) ? second_ : first_;
    if (other.end != kNever && other.end > begin)
      return other.party;
    return std::nullopt;
  }

 private:
  struct Entry {
    std::int64_t end = kNever;
    Owner owner{};
    Party party{};
  };
  Entry first_;
  Entry second_;
};

struct Interval {
  Span span;
  char mode = 'w';
  Party party;
  std::uint64_t owner = 0;
};

// Intervals of one name that overlap an earlier one of another owner, where readers may overlap
// readers: one violation per later interval. Counts in `shared` (if given) the readers that
// overlapped an earlier reader.
std::vector<std::pair<Party, Party>> overlaps(std::vector<Interval> intervals,
                                              std::size_t* shared = nullptr) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.span.begin, a.span.end) < std::tie(b.span.begin, b.span.end);
  });
  Reach<std::uint64_t> any;
  Reach<std::uint64_t> writers;
  Reach<std::uint64_t> readers;
  std::vector<std::pair<Party, Party>> found;
  for (const auto& interval : intervals) {
    const bool reader = interval.mode == 'r';
    const auto earlier = reader ? writers.conflict(interval.span.begin, interval.owner)
                                : any.conflict(interval.span.begin, interval.owner);
    if (earlier)
      found.emplace_back(*earlier, interval.party);
    if (reader && shared && readers.conflict(interval.span.begin, interval.owner))
      ++*shared;
    any.add(interval.span.end, interval.owner, interval.party);
    (reader ? readers : writers).add(interval.span.end, interval.owner, interval.party);
  }
  return found;
}

// Intervals of a semaphore's name beyond its `permits`: one violation per interval that began
// while `permits` others were still open (the other party: the one open the longest). Sets `peak`
// (if given) to the most intervals open at once.
std::vector<std::pair<Party, Party>> over_capacity(std::vector<Interval> intervals,
                                                   std::int64_t permits,
                                                   std::size_t* peak = nullptr) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.span.begin, a.span.end) < std::tie(b.span.begin, b.span.end);
  });
  std::multimap<std::int64_t, Party> open;  // by end
  std::vector<std::pair<Party, Party>> found;
  for (const auto& interval : intervals) {
    open.erase(open.begin(), open.upper_bound(interval.span.begin));  // touching is no overlap
    if (static_cast<std::int64_t>(open.size()) >= permits)
      found.emplace_back(open.begin()->second, interval.party);
    open.emplace(interval.span.end, interval.party);
    if (peak)
      *peak = std::max(*peak, open.size());
  }
  return found;
}

// The permits of each semaphore name, from its grants (the highest, should they differ).
std::map<std::string, std::int64_t> permits_by_name(const std::vector<Event>& events) {
  std::map<std::string, std::int64_t> permits;
  for (const auto& event : events)
    if (event.kind == EventKind::acquire_ok && event.mode == 'p')
      permits[event.name] = std::max(permits[event.name], event.value);
  return permits;
}

std::map<LeaseKey, LeaseLife> lease_lives(const std::vector<Event>& events,
                                          std::vector<Violation>* late_grants) {
  std::map<LeaseKey, LeaseLife> lives;
  for (const auto& event : events) {
    if (event.lease == 0)
      continue;
    const LeaseKey key{event.pid, event.lease};
    switch (event.kind) {
      case EventKind::acquire_ok:
      case EventKind::extend_ok: {
        auto& life = lives[key];
        if (event.kind == EventKind::acquire_ok) {
          life.name = event.name;
          life.mode = event.mode;
        }
        if (event.t < event.deadline) {
          life.pieces.push_back({event.t, event.deadline});
        } else if (late_grants) {
          Party party{event.pid, event.tid, event.lease, event.mode, {event.t, event.deadline}};
          late_grants->push_back({event.name,
                                  party,
                                  {},
                                  std::string(to_string(event.kind)) + " reported " +
                                      ms_text(event.t - event.deadline) +
                                      " after its own deadline"});
        }
        break;
      }
      case EventKind::release_call: {
        auto& life = lives[key];
        if (!life.cut)
          life.cut = event.t;
        break;
      }
      default:
        break;
    }
  }
  for (auto& [key, life] : lives) {
    auto& pieces = life.pieces;
    if (life.cut)
      for (auto& piece : pieces)
        piece.end = std::min(piece.end, *life.cut);
    std::erase_if(pieces, [](const Span& span) { return span.end <= span.begin; });
    std::sort(pieces.begin(), pieces.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    std::vector<Span> merged;
    for (const auto& piece : pieces) {
      if (!merged.empty() && piece.begin <= merged.back().end)
        merged.back().end = std::max(merged.back().end, piece.end);
      else
        merged.push_back(piece);
    }
    pieces = std::move(merged);
  }
  return lives;
}

struct Section {
  std::string name;
  Party party;
  bool valid = false;
  std::size_t counter_checks = 0;
  std::optional<Event> counter_changed;  // the first counter_check whose two reads differ
  std::int64_t occupancy = 0;            // the highest count of its occupancy events; 0: none
};

std::vector<Section> sections_of(const std::vector<Event>& events) {
  struct Open {
    Event begin;
    std::size_t counter_checks = 0;
    std::optional<Event> counter_changed;
    std::int64_t occupancy = 0;
  };
  // By (pid, tid, name): a thread has one section open per name (a lease on several names has one
  // per name). Keyed by name, not lease number: a check inside a section names the name it read.
  std::map<std::tuple<int, int, std::string>, Open> open;
  std::vector<Section> sections;
  for (const auto& event : events) {
    const std::tuple<int, int, std::string> thread{event.pid, event.tid, event.name};
    if (event.kind == EventKind::cs_begin) {
      open[thread] = {event, 0, std::nullopt, 0};
    } else if (event.kind == EventKind::occupancy) {
      const auto section = open.find(thread);
      if (section != open.end())
        section->second.occupancy = std::max(section->second.occupancy, event.value);
    } else if (event.kind == EventKind::counter_check) {
      const auto section = open.find(thread);
      if (section == open.end())
        continue;
      ++section->second.counter_checks;
      if (event.read != event.value && !section->second.counter_changed)
        section->second.counter_changed = event;
    } else if (event.kind == EventKind::cs_end) {
      const auto section = open.find(thread);
      if (section == open.end())
        continue;
      const Event& start = section->second.begin;
      sections.push_back({event.name,
                          {event.pid, event.tid, start.lease, start.mode, {start.t, event.t}},
                          event.valid,
                          section->second.counter_checks,
                          section->second.counter_changed,
                          section->second.occupancy});
      open.erase(section);
    }
  }
  return sections;
}

// Timed values on one name (accepted fenced writes, or fenced grants), each with when it was
// asked for and when it was answered.
struct Stamped {
  std::int64_t sent;
  std::int64_t answered;
  std::int64_t value;
  Party party;
};

// A value answered before another was asked for preceded it for sure: it must be smaller. Values
// whose calls overlap may have been given in either order. `what` names the values ("accepted").
void check_increasing(const std::map<std::string, std::vector<Stamped>>& by_name,
                      const std::string& what, std::vector<Violation>& violations) {
  for (const auto& [name, given] : by_name) {
    auto by_answer = given;
    std::sort(by_answer.begin(), by_answer.end(),
              [](const Stamped& a, const Stamped& b) { return a.answered < b.answered; });
    auto by_call = given;
    std::sort(by_call.begin(), by_call.end(),
              [](const Stamped& a, const Stamped& b) { return a.sent < b.sent; });
    std::size_t done = 0;
    const Stamped* highest = nullptr;
    for (const auto& later : by_call) {
      while (done < by_answer.size() && by_answer[done].answered < later.sent) {
        if (!highest || by_answer[done].value > highest->value)
          highest = &by_answer[done];
        ++done;
      }
      if (highest && highest->value >= later.value) {
        violations.push_back({name, highest->party, later.party,
                              "fence " + std::to_string(later.value) + " " + what +
                                  " after fence " + std::to_string(highest->value) + " had been " +
                                  what});
      }
    }
  }
}

void check_fences(const std::vector<Event>& events, HistoryReport& report) {
  std::map<std::string, std::vector<Stamped>> accepted;
  std::map<std::string, std::vector<Stamped>> granted;
  for (const auto& event : events) {
    if (event.kind == EventKind::acquire_ok && event.mode != 'p' && event.value > 0) {
      const std::int64_t sent = event.start != 0 ? event.start : event.t;
      ++report.fenced_grants;
      granted[event.name].push_back(
          {sent, event.t, event.value, {event.pid, event.tid, event.lease, 'w', {sent, event.t}}});
      continue;
    }
    if (event.kind != EventKind::fence)
      continue;
    if (!event.ok) {
      if (event.detail != "unknown")  // the write failed with an error: no answer from the resource
        ++report.fences_rejected;
      continue;
    }
    ++report.fences_accepted;
    const std::int64_t sent = event.start != 0 ? event.start : event.t;
    accepted[event.name].push_back(
        {sent, event.t, event.value, {event.pid, event.tid, event.lease, 'w', {sent, event.t}}});
  }
  check_increasing(accepted, "accepted", report.fence_order);
  check_increasing(granted, "granted", report.fence_order);
}

void check_counters(const std::vector<Event>& events, HistoryReport& report) {
  std::map<std::string, std::map<std::int64_t, const Event*>> written;
  for (const auto& event : events) {
    if (event.kind != EventKind::counter || !event.ok)
      continue;
    ++report.counter_writes;
    Party party{event.pid, event.tid, event.lease, 'w', {event.start, event.t}};
    if (event.value != event.read + 1) {
      report.counter_errors.push_back({event.name,
                                       party,
                                       {},
                                       "wrote " + std::to_string(event.value) + " after reading " +
                                           std::to_string(event.read)});
    }
    auto [at, inserted] = written[event.name].emplace(event.value, &event);
    if (!inserted) {
      const Event& other = *at->second;
      report.counter_errors.push_back(
          {event.name,
           {other.pid, other.tid, other.lease, 'w', {other.start, other.t}},
           party,
           "two sections both wrote " + std::to_string(event.value) + ": an update was lost"});
    }
  }
}

}  // namespace

HistoryReport check_history(const std::vector<Event>& events) {
  HistoryReport report;
  const auto lives = lease_lives(events, &report.late_grants);
  report.leases = lives.size();

  // Double grants: pieces of provable life of different leases on one name.
  std::map<std::string, std::vector<Interval>> pieces_by_name;
  std::uint64_t owner = 0;
  for (const auto& [key, life] : lives) {
    ++owner;
    for (const auto& piece : life.pieces)
      pieces_by_name[life.name].push_back(
          {piece, life.mode, {key.first, 0, key.second, life.mode, piece}, owner});
  }
  const auto permits = permits_by_name(events);
  for (auto& [name, intervals] : pieces_by_name) {
    if (const auto semaphore = permits.find(name); semaphore != permits.end()) {
      for (auto& [earlier, later] : over_capacity(std::move(intervals), semaphore->second))
        report.double_grants.push_back(
            {name, earlier, later,
             "more than " + std::to_string(semaphore->second) + " permits provably live at once"});
      continue;
    }
    for (auto& [earlier, later] : overlaps(std::move(intervals)))
      report.double_grants.push_back({name, earlier, later, "two leases provably live at once"});
  }

  // Sections.
  const auto sections = sections_of(events);
  report.sections = sections.size();
  std::map<std::string, std::vector<Interval>> valid_by_name;
  for (const auto& section : sections) {
    if (!section.valid)
      continue;
    ++report.valid_sections;
    report.counter_checks += section.counter_checks;
    if (section.counter_changed) {
      report.counter_errors.push_back({section.counter_changed->name,
                                       section.party,
                                       {},
                                       "the counter changed from " +
                                           std::to_string(section.counter_changed->read) + " to " +
                                           std::to_string(section.counter_changed->value) +
                                           " during a valid section that does not write it"});
    }
    if (section.occupancy > 0) {
      ++report.occupancy_checks;
      const auto semaphore = permits.find(section.name);
      if (semaphore == permits.end() || section.occupancy > semaphore->second) {
        report.counter_errors.push_back(
            {section.name,
             section.party,
             {},
             std::to_string(section.occupancy) + " holders counted inside at Redis, " +
                 (semaphore == permits.end()
                      ? std::string("with no permits granted")
                      : "with " + std::to_string(semaphore->second) + " permits")});
      }
    }
    valid_by_name[section.name].push_back(
        {section.party.span, section.party.mode, section.party, ++owner});
    if (section.party.lease == 0)
      continue;  // e.g. with_lock: the worker cannot see the lease
    const auto life = lives.find({section.party.pid, section.party.lease});
    const bool inside =
        life != lives.end() &&
        std::any_of(life->second.pieces.begin(), life->second.pieces.end(), [&](const Span& p) {
          return p.begin <= section.party.span.begin && section.party.span.end <= p.end;
        });
    if (!inside) {
      report.false_held.push_back({section.name,
                                   section.party,
                                   {},
                                   life == lives.end()
                                       ? "a valid section under a lease that was never granted"
                                       : "a valid section outside the proven life of its lease"});
    }
  }
  for (auto& [name, intervals] : valid_by_name) {
    if (const auto semaphore = permits.find(name); semaphore != permits.end()) {
      std::size_t peak = 0;
      for (auto& [earlier, later] : over_capacity(std::move(intervals), semaphore->second, &peak))
        report.section_overlaps.push_back(
            {name, earlier, later,
             "more than " + std::to_string(semaphore->second) + " valid permit sections at once"});
      report.permit_peak = std::max(report.permit_peak, peak);
      continue;
    }
    for (auto& [earlier, later] : overlaps(std::move(intervals), &report.reader_overlaps))
      report.section_overlaps.push_back(
          {name, earlier, later, "two valid critical sections overlap"});
  }

  for (const auto& event : events)
    if (event.kind == EventKind::loss)
      ++report.losses;
  check_fences(events, report);
  check_counters(events, report);
  return report;
}

std::string HistoryReport::summary(std::size_t per_kind) const {
  std::ostringstream out;
  out << leases << " leases, " << sections << " sections (" << valid_sections << " valid), "
      << losses << " losses, fences " << fences_accepted << " accepted / " << fences_rejected
      << " rejected / " << fenced_grants << " granted, " << counter_writes << " counter writes, "
      << counter_checks << " counter checks, " << reader_overlaps
      << " reader overlaps, permit peak " << permit_peak << ", " << occupancy_checks
      << " occupancy checks; violations: " << double_grants.size() << " double grants, "
      << section_overlaps.size() << " section overlaps, " << false_held.size() << " false held, "
      << late_grants.size() << " late grants, " << fence_order.size() << " fence order, "
      << counter_errors.size() << " counter\n";
  const auto list = [&](const char* kind, const std::vector<Violation>& violations) {
    for (std::size_t i = 0; i < violations.size() && i < per_kind; ++i) {
      const auto& v = violations[i];
      out << "  " << kind << " on '" << v.name << "': " << v.what << ": " << describe(v.first);
      if (v.second.pid != 0)
        out << " and " << describe(v.second);
      out << "\n";
    }
  };
  list("double grant", double_grants);
  list("section overlap", section_overlaps);
  list("false held", false_held);
  list("late grant", late_grants);
  list("fence order", fence_order);
  list("counter", counter_errors);
  return out.str();
}

std::vector<std::string> check_counter_final(const std::vector<Event>& events,
                                             const std::string& name, long long final_value) {
  long long confirmed = 0;
  long long unknown = 0;
  for (const auto& event : events) {
    if (event.kind != EventKind::counter || event.name != name)
      continue;
    ++(event.ok ? confirmed : unknown);
  }
  std::vector<std::string> problems;
  if (final_value < confirmed || final_value > confirmed + unknown) {
    problems.push_back("counter '" + name + "' is " + std::to_string(final_value) + " after " +
                       std::to_string(confirmed) + " confirmed writes and " +
                       std::to_string(unknown) + " of unknown outcome");
  }
  return problems;
}

std::vector<LossReport> loss_reports(const std::vector<Event>& events) {
  const auto lives = lease_lives(events, nullptr);
  std::vector<LossReport> reports;
  for (const auto& event : events) {
    if (event.kind != EventKind::loss)
      continue;
    LossReport report{event.name, event.pid, event.lease, event.t, 0, event.detail};
    const auto life = lives.find({event.pid, event.lease});
    if (event.lease != 0 && life != lives.end() && !life->second.pieces.empty())
      report.deadline = life->second.pieces.back().end;
    reports.push_back(std::move(report));
  }
  return reports;
}

std::vector<Takeover> takeovers(const std::vector<Event>& events) {
  std::vector<Takeover> found;
  for (const auto& death : events) {
    if (death.kind != EventKind::fault || death.detail != "sigkill" || death.target == 0)
      continue;
    // The victim's last lifecycle event on each name, before it died.
    std::map<std::string, EventKind> last;
    for (const auto& event : events) {
      if (event.t > death.t)
        break;
      if (event.pid != death.target || event.name.empty() || event.kind == EventKind::fence ||
          event.kind == EventKind::counter || event.kind == EventKind::counter_check ||
          event.kind == EventKind::fault)
        continue;
      last[event.name] = event.kind;
    }
    for (const auto& [name, kind] : last) {
      if (kind == EventKind::acquire_fail || kind == EventKind::release_ok ||
          kind == EventKind::release_fail)
        continue;  // certainly not held
      Takeover takeover{name, death.target, death.t, std::nullopt};
      for (const auto& event : events) {
        if (event.t > death.t && event.kind == EventKind::acquire_ok && event.name == name &&
            event.pid != death.target) {
          takeover.next_grant = event.t;
          break;
        }
      }
      found.push_back(std::move(takeover));
    }
  }
  return found;
}

Stats stats_ms(std::vector<std::int64_t> nanoseconds) {
  Stats stats;
  stats.count = nanoseconds.size();
  if (nanoseconds.empty())
    return stats;
  std::sort(nanoseconds.begin(), nanoseconds.end());
  stats.p50_ms = static_cast<double>(nanoseconds[(nanoseconds.size() - 1) / 2]) / 1e6;
  stats.max_ms = static_cast<double>(nanoseconds.back()) / 1e6;
  return stats;
}

}  // namespace leasehold::testing
