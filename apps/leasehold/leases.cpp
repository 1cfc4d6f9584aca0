// The leases the command keeps under a NAME, read through the library's status query.
#include "leases.hpp"

#include "displayable.hpp"

namespace leasehold::cli {

using std::chrono::milliseconds;

std::vector<NameLeases> read_leases(const Globals& globals, Client& redis,
                                    const std::vector<std::string>& names) {
  // The ttl and the count of permits play no part in a read.
  const auto run = run_lock(globals, milliseconds(1000));
  const auto permits = run_semaphore(globals, milliseconds(1000), 1);
  const auto cron = cron_lock(globals, milliseconds(1000));
  std::vector<LeaseStatusQuery<>> batch;
  batch.reserve(names.size() * 3);
  for (const std::string& name : names) {
    batch.emplace_back(lease_status(run, name));
    batch.emplace_back(lease_status(permits, name));
    batch.emplace_back(lease_status(cron, name));
  }
  // The elections' keys are in slots of their own: a batch of their own.
  const auto election = elect_election(globals, milliseconds(1000));
  std::vector<decltype(election.leader(std::string()))> leader_batch;
  leader_batch.reserve(names.size());
  for (const std::string& name : names)
    leader_batch.push_back(election.leader(name));
  std::vector<Result<LeaseStatus>> statuses = redis.process(batch);
  auto leaders = redis.process(leader_batch);
  std::vector<NameLeases> leases;
  leases.reserve(names.size());
  for (std::size_t n = 0; n < names.size(); ++n)
    leases.push_back(NameLeases{names[n], std::move(statuses[3 * n]),
                                std::move(statuses[3 * n + 1]), std::move(statuses[3 * n + 2]),
                                std::move(leaders[n])});
  return leases;
}

namespace {

// "web-3, pid 4121, "deploy.sh prod", for 12 s": who holds a lease, and since when.
std::string holder_text(const Holder& holder) {
  const auto held =
      std::max(milliseconds::zero(),
               std::chrono::duration_cast<milliseconds>(server_clock_now() - holder.taken_at));
  return displayable(holder.host) + ", pid " + std::to_string(holder.pid) + ", \"" +
         displayable(holder.label) + "\", for " + format_duration(held);
}

}  // namespace

std::string lease_text(const LeaseInfo& lease) {
  std::string text = displayable(lease.id_prefix) + "\xe2\x80\xa6 (";
  if (lease.holder)
    text += holder_text(*lease.holder) + "; ";
  if (lease.time_left < milliseconds::zero())
    return text + "no TTL: it never runs out)";
  return text + format_duration(lease.time_left) + " left)";
}

std::string leader_text(const Leader& leader) {
  std::string text = "term " + std::to_string(leader.term) + ": ";
  text +=
      leader.holder ? holder_text(*leader.holder) : displayable(leader.id_prefix) + "\xe2\x80\xa6";
  if (leader.value)
    text += "; value \"" + displayable(*leader.value) + "\"";
  return text + "; " + format_duration(leader.time_left) + " left";
}

}  // namespace leasehold::cli
