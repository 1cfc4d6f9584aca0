// The leases the command keeps under a NAME — its run lease (exclusive or shared), its `--limit`
// permits and its cron interval — read through the library's status query, and their words.
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"

namespace leasehold::cli {

struct NameLeases {
  std::string name;
  Result<LeaseStatus> run;      // the writer (exclusive) and readers (shared), waiters, fence
  Result<LeaseStatus> permits;  // `run --limit` permits
  Result<LeaseStatus> cron;     // the cron interval's lease
  Result<std::optional<Leader>> leader;  // who leads the name's election (leasehold elect)
};

// Every name's leases, read in one batch: one round trip (one per node on a cluster).
std::vector<NameLeases> read_leases(const Globals& globals, Client& redis,
                                    const std::vector<std::string>& names);

// A lease for a terminal: "02b93aa7… (web-3, pid 4121, "deploy.sh prod", for 12 s; 18 s left)";
// without a holder's identity "02b93aa7… (18 s left)". Its token, host and label are displayable
// (another client's value, or a holder's identity, may hold any bytes).
std::string lease_text(const LeaseInfo& lease);

// A leader for a terminal: "term 7: web-3, pid 4121, "scheduler --eu", for 12 s; value
// "10.0.0.7:8080"; 18 s left", displayable as lease_text() is.
std::string leader_text(const Leader& leader);

}  // namespace leasehold::cli
