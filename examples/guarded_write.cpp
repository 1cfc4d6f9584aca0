// Writes a stale holder cannot make. A holder stalls (a GC pause, SIGSTOP) until its lease runs
// out; another replica takes over and writes. When the first resumes, its guarded write — the
// lease checked in the same script as the write — runs nothing, and its fenced write — the fence
// of its grant, older than the new holder's — is refused. See docs/fencing.md.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./guarded_write
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

// Fenced: each grant has a fencing number, and the keys carry a hash tag the data can share.
const auto kInvoices = leasehold::Lock<std::string>{"invoice", 200ms}.with_fencing();

// Finalizes the invoice as `who`: a guarded write of its row, and a fenced write of its PDF's
// location. True if both were done.
bool finalize(leasehold::Client& redis,
              const leasehold::LockToken<leasehold::Lock<std::string>>& token,
              const std::string& who) {
  const std::string row = "invoice:" + kInvoices.hash_tag("42") + ":row";  // in the lock's slot
  auto guarded = leasehold::guarded(token);
  guarded.call({"HSET", row, "state", "final", "by", who});
  const bool written = redis.process(guarded).has_value();
  const auto verdict = redis.process(
      leasehold::fenced_set("invoice:42:pdf", "s3://invoices/42-" + who, *token.fence()));
  std::cout << who << " (fence " << *token.fence() << "): guarded write "
            << (written ? "done" : "NOT done: the lease had ended") << ", fenced write "
            << (verdict.accepted
                    ? "done"
                    : "refused: fence " + std::to_string(verdict.newest) + " wrote first")
            << "\n";
  return written && verdict.accepted;
}

int main() {
  const char* url = std::getenv("LEASEHOLD_REDIS_URL");
  try {
    leasehold::Client slow(url ? url : "redis://127.0.0.1:6379");
    leasehold::Client fast(url ? url : "redis://127.0.0.1:6379");

    auto stale = slow.process(kInvoices.try_lock("42"));
    std::cout << "slow holder: took invoice 42, then stalls...\n";
    while (!stale->expired())
      std::this_thread::sleep_for(10ms);  // the stall

    auto current = leasehold::lock_for(fast, kInvoices, std::string("42"), 5s);
    const bool fast_done = current && finalize(fast, *current, "fast");
    fast.process(current->release());

    std::cout << "slow holder resumes, unaware:\n";
    const bool slow_done = finalize(slow, *stale, "slow");
    const auto by = slow.process(
        leasehold::Command{"HGET", "invoice:" + kInvoices.hash_tag("42") + ":row", "by"});
    std::cout << "the row says it was finalized by " << by.str << "\n";
    return fast_done && !slow_done && by.str == "fast" ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
