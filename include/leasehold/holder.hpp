// Holder identity: who holds a lease, written into the lease's own value in Redis next to its
// id, so that it lives and dies with the lease (same key, same expiry) and costs no command of
// its own.
//
//   leasehold::set_holder_label("billing-worker");   // default: the program's name
//   ...
//   auto held = redis.process(leasehold::describe(invoices, 42));   // describe.hpp
//   // held[0].holder->host, ->pid, ->label, ->taken_at
//
// The identity is the process's: the host name, the process id, a label, and the moment of the
// acquire by the server's clock (server_clock_now(), clock.hpp). set_holder_identity(false) turns
// it off: leases taken after that hold their bare id. See docs/observability.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/detail/holder.hpp"

namespace leasehold {

struct Holder {
  std::string host;
  std::int64_t pid = 0;
  std::string label;
  // By the server's clock, as the holder measured it (clock.hpp's server_clock_now()).
  std::chrono::system_clock::time_point taken_at;
};

// The label of the leases this process takes from now on (its default: the program's name).
// Thread-safe.
void set_holder_label(std::string label);
// Whether the leases this process takes from now on carry its identity (default: true).
// Thread-safe.
void set_holder_identity(bool on);

// What a lease's stored value (a lock key's value, a reader's or a permit's member) says: its id's
// 32 hex digits, and its holder when it was taken with identity on. A waiter's mark on a lock key
// (docs/keys.md) is not part of it.
struct StoredLease {
  std::string id_hex;
  std::optional<Holder> holder;
  // The lease's value without the mark: what a primitive's adopt() takes.
  std::string value;
};
StoredLease read_stored_lease(std::string_view stored);

}  // namespace leasehold
