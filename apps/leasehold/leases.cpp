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
  std::vector<Result<LeaseStatus>> statuses = redis.process(batch);
  std::vector<NameLeases> leases;
  leases.reserve(names.size());
  for (std::size_t n = 0; n < names.size(); ++n)
    leases.push_back(NameLeases{names[n], std::move(statuses[3 * n]),
                                std::move(statuses[3 * n + 1]), std::move(statuses[3 * n + 2])});
  return leases;
}

std::string lease_text(const LeaseInfo& lease) {
  std::string text = displayable(lease.id_prefix) + "\xe2\x80\xa6 (";
  if (lease.holder) {
    const auto held = std::max(
        milliseconds::zero(),
        std::chrono::duration_cast<milliseconds>(server_clock_now() - lease.holder->taken_at));
    text += displayable(lease.holder->host) + ", pid " + std::to_string(lease.holder->pid) +
            ", \"" + displayable(lease.holder->label) + "\", for " + format_duration(held) + "; ";
  }
  if (lease.time_left < milliseconds::zero())
    return text + "no TTL: it never runs out)";
  return text + format_duration(lease.time_left) + " left)";
}

}  // namespace leasehold::cli
