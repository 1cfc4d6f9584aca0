// What a connection sends a server without Redis 7's additions instead of what a call asked for
// (compat mode: docs/connection.md, "Servers"). Two things change, and nothing else:
//   - SET key value NX PX ttl GET (Redis 7.0 accepts NX with GET) becomes a script with the same
//     effect and reply (scripts/set_nx_px_get.lua);
//   - a script that tells waiters with SPUBLISH (sharded pub/sub, Redis 7.0) tells them with
//     PUBLISH, which the subscriber then hears with SUBSCRIBE.
// The forms are script calls like any other: EVAL the first time on a connection, EVALSHA after,
// and EVAL again after a NOSCRIPT (the pipeline asks script_of() which script a call's form
// calls). No I/O.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "leasehold/request.hpp"

namespace leasehold::detail {

class Redis6Forms {
 public:
  // What to send in `request`'s place; nothing when it goes as it is.
  std::optional<Request> form_of(const Request& request);
  // The script that what is sent for `request` calls: its form's, or its own; null for a call
  // that is no script and has no form.
  const Script* script_of(const Request& request);

 private:
  // The SPUBLISH-free form of `script`; null when it has no SPUBLISH.
  const Script* without_sharded_publish(const Script& script);

  // The scripts seen so far, by digest, each with its form (null: it serves as it is).
  std::vector<std::pair<std::string, std::unique_ptr<Script>>> scripts_;
};

// Whether `request` is SET key value NX PX ttl GET (in any letter case).
bool is_set_nx_px_get(const Request& request);

// `body` with its SPUBLISH calls made PUBLISH calls, as the library's scripts write them
// (redis.pcall('SPUBLISH', ...)); nothing when it makes none.
std::optional<std::string> with_plain_publish(std::string body);

}  // namespace leasehold::detail
