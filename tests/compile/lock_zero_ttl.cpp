// Must not compile: a constant lock with a TTL of zero.
#include <leasehold/lock.hpp>

using namespace std::chrono_literals;
constexpr leasehold::Lock<std::uint64_t> broken{"invoice", 0ms};

int main() {}
