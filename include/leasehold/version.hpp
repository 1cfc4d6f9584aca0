#pragma once

namespace leasehold {
inline constexpr const char* version = "0.1.0";
}
