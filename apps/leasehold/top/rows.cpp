// leasehold top's rows: every lease of the names found, and the counts beside them.
#include <algorithm>
#include <tuple>

#include "top/rows.hpp"

namespace leasehold::cli::top_parts {
namespace {

using std::chrono::milliseconds;

// The leases a status found; none when a key of it holds another type (not a lease).
const std::vector<LeaseInfo>& leases_of(const Result<LeaseStatus>& status) {
  static const std::vector<LeaseInfo> none;
  if (!status && status.error() == errc::wrong_type)
    return none;
  return status.value().leases;
}

std::optional<long long> fence_of(const Result<LeaseStatus>& status) {
  if (!status || !status.value().fence)
    return std::nullopt;
  return static_cast<long long>(*status.value().fence);
}

long long waiters_of(const Result<LeaseStatus>& status) {
  return status ? static_cast<long long>(status.value().waiters) : 0;
}

Row row_of(const std::string& name, Kind kind, const LeaseInfo& lease, long long readers,
           long long waiters, std::optional<long long> fence) {
  return Row{name,         kind,    lease.id_prefix, lease.time_left.count(),
             lease.holder, readers, waiters,         fence};
}

// The rows of one name.
void add_name_rows(const NameLeases& name, std::vector<Row>& rows) {
  const std::vector<LeaseInfo>& run = leases_of(name.run);
  const auto readers = std::count_if(run.begin(), run.end(), [](const LeaseInfo& lease) {
    return lease.kind == LeaseInfo::Kind::shared;
  });
  for (const LeaseInfo& lease : run) {
    const Kind kind = lease.kind == LeaseInfo::Kind::shared ? Kind::shared : Kind::exclusive;
    rows.push_back(
        row_of(name.name, kind, lease, readers, waiters_of(name.run), fence_of(name.run)));
  }
  for (const LeaseInfo& lease : leases_of(name.permits))
    rows.push_back(row_of(name.name, Kind::permit, lease, 0, waiters_of(name.permits),
                          fence_of(name.permits)));
  for (const LeaseInfo& lease : leases_of(name.cron))
    rows.push_back(row_of(name.name, Kind::cron, lease, 0, 0, std::nullopt));
  if (name.leader && *name.leader) {
    const Leader& leader = **name.leader;
    rows.push_back(Row{name.name, Kind::leader, leader.id_prefix, leader.time_left.count(),
                       leader.holder, 0, 0, static_cast<long long>(leader.term)});
  }
}

}  // namespace

std::string_view kind_name(Kind kind) {
  constexpr std::string_view names[] = {"exclusive", "shared", "permit", "cron", "leader"};
  return names[static_cast<std::size_t>(kind)];
}

std::vector<Row> read_rows(const Globals& globals, Client& redis,
                           const std::set<std::string>& names) {
  std::vector<Row> rows;
  if (names.empty())
    return rows;
  for (const NameLeases& name :
       read_leases(globals, redis, std::vector<std::string>(names.begin(), names.end())))
    add_name_rows(name, rows);
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
