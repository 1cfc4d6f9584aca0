// Who leads an Election's name (election.hpp), as its leader() query reads it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "leasehold/holder.hpp"

namespace leasehold {

struct Leader {
  std::string id_prefix;         // the first 8 hex digits of its lease's id
  std::optional<Holder> holder;  // with holder identity on; holder->taken_at: leading since
  std::uint64_t term = 0;        // the fencing number its campaign was granted
  // What it proclaimed in this term; none before it proclaims anything.
  std::optional<std::string> value;
  // By the server's clock: how long its lease has left unless it extends it.
  std::chrono::milliseconds time_left{0};
};

}  // namespace leasehold
