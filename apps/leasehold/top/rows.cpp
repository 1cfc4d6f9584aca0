// leasehold top's rows: reading every lease of the names found, and the counts beside them.
#include <algorithm>
#include <tuple>

#include "top/rows.hpp"

namespace leasehold::cli::top_parts {
namespace {

using std::chrono::milliseconds;

// The counts beside a run name's leases, read in its slot (the run's and the permits' keys share
// the hash tag {run:NAME}): each queue's size and each last fencing number (0: none). pcall: a key
// of another type is no queue or counter of leasehold's, and counts as absent.
const Script& counts_script() {
  static const Script script(
      "local function size(key)\n"
      "  local n = redis.pcall('ZCARD', key)\n"
      "  return type(n) == 'number' and n or 0\n"
      "end\n"
      "local function fence(key)\n"
      "  local v = redis.pcall('GET', key)\n"
      "  return type(v) == 'string' and tonumber(v) or 0\n"
      "end\n"
      "return {size(KEYS[1]), fence(KEYS[2]), size(KEYS[3]), fence(KEYS[4])}\n");
  return script;
}

// The four calls that read a name: its run lease, its permits, its cron lease, the counts.
constexpr std::size_t kCallsPerName = 4;

void add_name_calls(const Globals& globals, const std::string& name, std::vector<Command>& calls) {
  const auto run = run_lock(globals, milliseconds(1000));
  const auto permits = run_semaphore(globals, milliseconds(1000), 1);
  calls.emplace_back(describe(run, name).request());
  calls.emplace_back(describe(permits, name).request());
  calls.emplace_back(describe(cron_lock(globals, milliseconds(1000)), name).request());
  const std::string run_queue = same_slot_key(run.writer_key(name), ":queue");
  const std::string run_fence = run.fence_key(name);
  const std::string permit_queue = same_slot_key(permits.holders_key(name), ":queue");
  const std::string permit_fence = permits.fence_key(name);
  const std::string_view keys[] = {run_queue, run_fence, permit_queue, permit_fence};
  calls.emplace_back(Request::script(counts_script(), keys, {}).retry_safe());
}

// The leases a describe call found; none when a key of it holds another type (not a lease).
std::vector<LeaseInfo> leases_of(const Result<Reply>& reply, LeaseInfo::Kind set_kind) {
  if (!reply && reply.error() == errc::wrong_type)
    return {};
  // The reply read as a Describe query reads it: only the kind of the set's members matters.
  return Describe<Lock<std::string>>({}, {}, set_kind).parse(reply.value(), Timing{}).value();
}

std::optional<long long> fence_of(const Reply& counter) {
  return counter.integer > 0 ? std::optional(counter.integer) : std::nullopt;
}

Row row_of(const std::string& name, Kind kind, const LeaseInfo& lease, long long readers,
           long long waiters, std::optional<long long> fence) {
  return Row{name,         kind,    lease.id_prefix, lease.time_left.count(),
             lease.holder, readers, waiters,         fence};
}

// The rows of one name from its calls' replies (kCallsPerName of them, from `at`).
void add_name_rows(const std::string& name, const std::vector<Result<Reply>>& replies,
                   std::size_t at, std::vector<Row>& rows) {
  const std::vector<LeaseInfo> run = leases_of(replies[at], LeaseInfo::Kind::shared);
  const std::vector<LeaseInfo> permits = leases_of(replies[at + 1], LeaseInfo::Kind::permit);
  const std::vector<LeaseInfo> cron = leases_of(replies[at + 2], LeaseInfo::Kind::exclusive);
  const std::vector<Reply>& counts = replies[at + 3].value().elements;
  const auto readers = std::count_if(run.begin(), run.end(), [](const LeaseInfo& lease) {
    return lease.kind == LeaseInfo::Kind::shared;
  });
  for (const LeaseInfo& lease : run) {
    const Kind kind = lease.kind == LeaseInfo::Kind::shared ? Kind::shared : Kind::exclusive;
    rows.push_back(
        row_of(name, kind, lease, readers, counts.at(0).integer, fence_of(counts.at(1))));
  }
  for (const LeaseInfo& lease : permits)
    rows.push_back(
        row_of(name, Kind::permit, lease, 0, counts.at(2).integer, fence_of(counts.at(3))));
  for (const LeaseInfo& lease : cron)
    rows.push_back(row_of(name, Kind::cron, lease, 0, 0, std::nullopt));
}

}  // namespace

std::string_view kind_name(Kind kind) {
  constexpr std::string_view names[] = {"exclusive", "shared", "permit", "cron"};
  return names[static_cast<std::size_t>(kind)];
}

std::vector<Row> read_rows(const Globals& globals, Client& redis,
                           const std::set<std::string>& names) {
  std::vector<Command> calls;
  calls.reserve(names.size() * kCallsPerName);
  for (const std::string& name : names)
    add_name_calls(globals, name, calls);
  std::vector<Row> rows;
  if (calls.empty())
    return rows;
  const std::vector<Result<Reply>> replies = redis.process(calls);
  std::size_t at = 0;
  for (const std::string& name : names) {
    add_name_rows(name, replies, at, rows);
    at += kCallsPerName;
  }
  return rows;
}

std::string prefix_pattern(const std::string& prefix) {
  std::string pattern;
  for (const char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\')
      pattern += '\\';
    pattern += c;
  }
  return pattern + ":*";
}

void sort_rows(std::vector<Row>& rows, const std::string& by) {
  const auto by_name = [](const Row& a, const Row& b) {
    return std::tie(a.name, a.kind, a.token) < std::tie(b.name, b.kind, b.token);
  };
  std::stable_sort(rows.begin(), rows.end(), by_name);
  if (by == "left")
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.ms_left < b.ms_left; });
  if (by == "held")
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      if (a.holder.has_value() != b.holder.has_value())
        return a.holder.has_value();
      return a.holder && a.holder->taken_at < b.holder->taken_at;
    });
}

Json rows_json(const std::vector<Row>& rows) {
  Json array = Json::array();
  for (const Row& row : rows)
    array.push_back({{"name", row.name},
                     {"kind", kind_name(row.kind)},
                     {"token", row.token},
                     {"ms_left", row.ms_left},
                     {"holder", holder_json(row.holder)},
                     {"readers", row.readers},
                     {"waiters", row.waiters},
                     {"fence", row.fence ? Json(*row.fence) : Json()}});
  return array;
}

}  // namespace leasehold::cli::top_parts
