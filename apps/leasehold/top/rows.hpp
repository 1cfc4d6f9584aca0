// leasehold top's rows: one per lease under the prefix, with the counts of its name that go with
// its kind, read in one round trip; sorted, and as JSON.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "inspect.hpp"

namespace leasehold::cli::top_parts {

enum class Kind { exclusive, shared, permit, cron, leader };  // the order of a name's rows

std::string_view kind_name(Kind kind);

// One lease, and the counts of its name that go with its kind.
struct Row {
  std::string name;
  Kind kind = Kind::exclusive;
  std::string token;  // the first 8 hex digits of its id
  long long ms_left = 0;
  std::optional<Holder> holder;
  long long readers = 0;           // exclusive and shared rows: the name's shared leases
  long long waiters = 0;           // the queue of the run lease, or of the permits
  std::optional<long long> fence;  // a leader's: its term
};

// Every lease of `names`, in one round trip (a cluster's: one per master).
std::vector<Row> read_rows(const Globals& globals, Client& redis,
                           const std::set<std::string>& names);

// The SCAN pattern of every key under the prefix, its glob characters taken literally.
std::string prefix_pattern(const std::string& prefix);

// By name (then kind), by time left (least first) or by time held (longest first; leases
// without a holder's identity last).
void sort_rows(std::vector<Row>& rows, const std::string& by);

// The rows as --json prints them: an array of objects.
Json rows_json(const std::vector<Row>& rows);

}  // namespace leasehold::cli::top_parts
