// A node of a torture deployment: a separate process that takes leases in a loop and records
// what it did (history.hpp) for the checker. The torture tests start several, then kill, stop or
// starve them, or restart the server under them.
//
// leasehold-torture-worker MODE --url URL --out FILE [--option value]...
//
// with-lock: --threads N threads run with_lock (waiting forever) on random names of --names
//   (a,b,c) with --ttl-ms; each section reads the counter "<prefix>:counter:<name>", holds
//   --hold-us, writes it + 1 (unless the lease was lost meanwhile). Runs --duration-ms, or until
//   the file --stop-file exists.
// lease: Lock<std::string>{"torture", ttl, prefix} with try_lock (retried every --retry-ms) and
//   while_held; each section lasts --cs-ms MIN[:MAX] and, with --fence, ends with a fenced write
//   (see below); with --write-after-loss the section runs to its end and makes its write even
//   after the lease was lost (a holder that does not look at its stop token). Extensions are seen
//   as the token's deadline moving. With --probe the worker instead tries every name once per
//   --retry-ms and releases at once. Runs --duration-ms or --iterations sections, or until the
//   file --stop-file exists. With
//   --lock rwlock-writer it takes the writer side of an RwLock<std::string> (try_write) instead;
//   with --lock-fence the lock hands out fencing numbers (with_fencing()) and the fenced write
//   carries the token's fence() instead of a version read from the resource; with --guarded the
//   write is a guarded SET of the version (done only while the lease is held) instead.
// rwlock: --threads N threads, the first --readers of them readers and the rest writers, take
//   RwLock<std::string>{"torture", ttl, prefix} (with --writer-preference-ms, writers preferred;
//   with --fence, fenced writers) on random names of --names with try_read / try_write, retried
//   every --retry-ms, and run a section under while_held. A writer's section reads the counter
//   "<prefix>:counter:<name>", holds --hold-us, writes it + 1 (and with --fence makes a fenced
//   write with its token's fence()); a reader's reads the counter, holds --read-hold-us and reads
//   it again: a writer inside the section would have changed it. A writer pauses --write-pause-ms
//   after each of its sections. Runs --duration-ms.
// semaphore: --threads N threads take permits of Semaphore<std::string>{"torture", --permits, ttl,
//   prefix} on random names of --names, each with acquire_for (waiting in turn up to --wait-ms)
//   or, without --wait-ms, try_acquire retried every --retry-ms, and run a section of --cs-ms
//   MIN[:MAX] under while_held; with --occupancy a section counts itself in and out at Redis
//   (INCR/DECR "<prefix>:inside:<name>") and records the count it found. Runs --duration-ms.
// cron: a cron::Scheduler job (AtLeast --interval-ms) that claims cron::IntervalLease
//   (--lease-ms) on --names' first name at each tick and then runs for --run-ms.
// elector: run_elector on --names' first name; each term a section of --cs-ms MIN[:MAX], cut
//   short when the leadership ends, recorded with its term as the fencing number.
//
// The fenced resource is a Redis key "<prefix>:fence:<name>" holding the highest fence accepted
// so far; it accepts a write only if its fence is higher (a Lua script). The fence is either a
// version the holder reads from the resource under its lease and increments, or the fencing
// number its lock granted (token.fence()). Either way a stale holder whose lease ran out while
// someone else wrote is refused — the fencing of docs/locks.md.
#include <iostream>
#include <string>

#include "worker.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: leasehold-torture-worker with-lock|lease|rwlock|semaphore|cron|elector "
                 "--url URL "
                 "--out FILE "
                 "[--option value]...\n";
    return 64;
  }
  try {
    using namespace leasehold::testing::torture_worker;
    const Options options = parse_options(argc, argv);
    const std::string mode = argv[1];
    if (mode == "with-lock")
      return run_with_lock(options);
    if (mode == "lease")
      return run_lease(options);
    if (mode == "rwlock")
      return run_rwlock(options);
    if (mode == "semaphore")
      return run_semaphore(options);
    if (mode == "cron")
      return run_cron(options);
    if (mode == "elector")
      return run_elector(options);
    std::cerr << "leasehold-torture-worker: unknown mode " << mode << "\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "leasehold-torture-worker: " << e.what() << "\n";
    return 1;
  }
}
