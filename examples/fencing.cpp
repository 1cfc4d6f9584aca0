// What a lease cannot do, and what fencing adds. A holder that stalls (GC pause, SIGSTOP, a slow
// disk) can resume after its lease ran out and someone else took over. The lease cannot stop its
// writes; the protected resource can, if every write says which version it expects
// (UPDATE ... WHERE version = $expected). Here the resource is a versioned record in Redis.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 ./fencing
#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <thread>

using namespace std::chrono_literals;

constexpr leasehold::Lock<std::string> kRecords{"record", 200ms};

// The resource: a hash {value, version}. A write succeeds only if the version is the one the
// writer read; it bumps the version. Returns the new version, or -1 if the write was fenced off.
const char* const kConditionalWrite =
    "local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')\n"
    "if current ~= tonumber(ARGV[1]) then return -1 end\n"
    "redis.call('HSET', KEYS[1], 'value', ARGV[2], 'version', current + 1)\n"
    "return current + 1\n";

long long read_version(leasehold::Client& redis) {
  auto reply = redis.process(leasehold::Command{"HGET", "example:record", "version"});
  return reply.is_nil() ? 0 : std::stoll(reply.str);
}

long long write(leasehold::Client& redis, long long expected_version, const std::string& value) {
  return redis
      .process(leasehold::Command{"EVAL", kConditionalWrite, "1", "example:record",
                                  std::to_string(expected_version), value})
      .integer;
}

int main() {
  const char* url = std::getenv("LEASEHOLD_REDIS_URL");
  try {
    leasehold::Client slow(url ? url : "redis://127.0.0.1:6379");
    leasehold::Client fast(url ? url : "redis://127.0.0.1:6379");
    slow.process(leasehold::Command{"DEL", "example:record"});

    auto slow_token = slow.process(kRecords.try_lock("r1"));
    const long long slow_read = read_version(slow);
    std::cout << "slow holder: locked, read version " << slow_read << ", then stalls...\n";
    while (!slow_token->expired())
      std::this_thread::sleep_for(10ms);  // the stall

    std::optional<leasehold::LockToken<leasehold::Lock<std::string>>> fast_token;
    while (!(fast_token = fast.process(kRecords.try_lock("r1"))))
      std::this_thread::sleep_for(10ms);
    const long long fast_read = read_version(fast);
    const long long fast_wrote = write(fast, fast_read, "written by the new holder");
    std::cout << "new holder: took over, wrote version " << fast_wrote << "\n";
    fast.process(fast_token->release());

    // The stale holder resumes: its lease is gone, but it does not know until it checks. Its write
    // names the version it read, and the record refuses it.
    const long long stale = write(slow, slow_read, "written by the stale holder");
    std::cout << "slow holder resumes: its write is "
              << (stale < 0 ? "refused (fenced off)" : "ACCEPTED (no fencing!)") << "\n";
    std::cout << "and its release says " << std::boolalpha << slow.process(slow_token->release())
              << " (the lease had run out)\n";
    return (fast_wrote == 1 && stale < 0) ? 0 : 1;
  } catch (const leasehold::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
